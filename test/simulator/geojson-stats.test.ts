import { describe, expect, it } from 'vitest';
import { simulatorForSuite } from '../helpers/simulator.js';

interface Feature {
  type: string;
  id: string;
  geometry: { type: string; coordinates: [number, number] };
  properties: Record<string, unknown>;
}

describe('GET /reports.geojson', () => {
  const sim = simulatorForSuite({ fixture: 'small.ndjson' });

  it('is an RFC 7946 FeatureCollection of points [lng, lat], without reports lacking a location', async () => {
    const res = await fetch(sim().api('/reports.geojson'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/geo+json; charset=utf-8');
    const body = (await res.json()) as { type: string; features: Feature[] };
    expect(body.type).toBe('FeatureCollection');
    // A2 and A5... A5 has a location through the top-level lat/lng alias; A2 has none.
    expect(body.features.map((f) => f.id)).toEqual(['A10', 'A7', 'A3', 'A4', 'A8', 'A1', 'A9', 'A6', 'A5']);
    const a5 = body.features.find((f) => f.id === 'A5');
    expect(a5?.geometry).toEqual({ type: 'Point', coordinates: [13.405, 52.52] });
    expect(a5?.properties).not.toHaveProperty('location');
    expect(a5?.properties).toMatchObject({ id: 'A5', status: 'RESOLVED', tags: ['night', 'dark'] });
    expect(body.features.every((f) => f.type === 'Feature')).toBe(true);
  });

  it('filters like the list', async () => {
    const res = await fetch(sim().api('/reports.geojson?destination=ROAD_CONTROL&status=SUBMITTED'));
    const body = (await res.json()) as { features: Feature[] };
    expect(body.features.map((f) => f.id)).toEqual(['A7', 'A4', 'A1', 'A9']);
  });
});

describe('GET /reports/stats', () => {
  const sim = simulatorForSuite({ generate: { n: 2500, seed: 3 } });

  it('counts what the list pages through, with sorted keys', async () => {
    const stats = (await (await fetch(sim().api('/reports/stats'))).json()) as {
      total: number;
      byStatus: Record<string, number>;
      byDestination: Record<string, number>;
    };
    const all: Array<{ status: string; destination: string }> = [];
    for (let page = 1; ; page++) {
      const items = (await (
        await fetch(sim().api(`/reports?pageSize=1000&page=${page}`))
      ).json()) as typeof all;
      if (items.length === 0) break;
      all.push(...items);
    }
    expect(stats.total).toBe(all.length);
    const count = (key: 'status' | 'destination') =>
      all.reduce<Record<string, number>>((acc, r) => ({ ...acc, [r[key]]: (acc[r[key]] ?? 0) + 1 }), {});
    expect(stats.byStatus).toEqual(count('status'));
    expect(stats.byDestination).toEqual(count('destination'));
    expect(Object.keys(stats.byDestination)).toEqual(Object.keys(stats.byDestination).sort());
    for (const [status, n] of Object.entries(stats.byStatus)) {
      const filtered = (await (
        await fetch(sim().api(`/reports?pageSize=1000&status=${status}`))
      ).json()) as unknown[];
      expect(filtered.length).toBe(Math.min(n, 1000));
    }
  });
});
