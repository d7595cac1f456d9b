import { describe, expect, it } from 'vitest';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';

interface Wire {
  id: string;
  status: string;
  updatedAt: string;
}

const getJson = async <T>(url: string): Promise<T> => (await (await fetch(url)).json()) as T;
const exportIds = async (sim: TestSimulator) =>
  (await (await fetch(sim.api('/reports.ndjson'))).text())
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      try {
        return (JSON.parse(l) as { id?: string }).id ?? '(no id)';
      } catch {
        return '(not json)';
      }
    });

describe('simulated days over HTTP', () => {
  it('moves statuses, adds and unpublishes reports on every endpoint, and changes the ETag', async () => {
    const sim = await startTestSimulator({ fixture: 'small.ndjson', seed: 2 });
    const before = await getJson<Wire[]>(sim.api('/reports'));
    const exportBefore = await exportIds(sim);
    const etagBefore = (await fetch(sim.api('/reports.ndjson'), { method: 'HEAD' })).headers.get('etag');

    const summary = sim.advanceDays(1);

    const after = await getJson<Wire[]>(sim.api('/reports'));
    const byId = new Map(after.map((r) => [r.id, r]));
    const gone = before.filter((r) => !byId.has(r.id)).map((r) => r.id);
    const added = after.filter((r) => !before.some((b) => b.id === r.id));
    expect(gone).toHaveLength(summary.unpublished);
    expect(added).toHaveLength(summary.added);
    const moved = before.filter((r) => byId.has(r.id) && byId.get(r.id)?.status !== r.status);
    expect(moved).toHaveLength(summary.moved);

    const exportAfter = await exportIds(sim);
    for (const id of gone) expect(exportAfter).not.toContain(id);
    for (const r of added) expect(exportAfter).toContain(r.id);
    // Warts are the export job's: they stay.
    expect(exportAfter.filter((id) => id === '(no id)' || id === '(not json)')).toEqual(
      exportBefore.filter((id) => id === '(no id)' || id === '(not json)'),
    );
    const stats = await getJson<{ total: number }>(sim.api('/reports/stats'));
    expect(stats.total).toBe(after.length);
    const geo = await getJson<{ features: Array<{ id: string }> }>(sim.api('/reports.geojson'));
    for (const id of gone) expect(geo.features.map((f) => f.id)).not.toContain(id);

    const res = await fetch(sim.api('/reports.ndjson'), { headers: { 'If-None-Match': etagBefore ?? '' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).not.toBe(etagBefore);
    expect(res.headers.get('last-modified')).toBe('Thu, 07 Mar 2024 21:10:00 GMT');
    await res.arrayBuffer();
  });

  it('gives the same history for the same seed, through the handle or the admin endpoint', async () => {
    const a = await startTestSimulator({ generate: { n: 400, seed: 8 } });
    const b = await startTestSimulator({ generate: { n: 400, seed: 8 } });
    a.advanceDays(2);
    await fetch(`${b.url}/__admin/advance?days=1`, { method: 'POST' });
    await fetch(`${b.url}/__admin/advance?days=1`, { method: 'POST' });
    const [ea, eb] = await Promise.all([fetch(a.api('/reports.ndjson')), fetch(b.api('/reports.ndjson'))]);
    expect(ea.headers.get('etag')).toBe(eb.headers.get('etag'));
    expect(await ea.text()).toBe(await eb.text());
  });

  it('keeps a streaming export on the state it started with when a day passes meanwhile', async () => {
    const sim = await startTestSimulator({ generate: { n: 30_000, seed: 5 } });
    const res = await fetch(sim.api('/reports.ndjson'));
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let bytes = 0;
    let lines = 0;
    const first = await reader.read();
    const summary = sim.advanceDays(1);
    expect(summary.added + summary.unpublished).toBeGreaterThan(0);
    for (let chunk = first; !chunk.done; chunk = await reader.read()) {
      bytes += chunk.value.length;
      for (const b of chunk.value) if (b === 10) lines++;
    }
    expect(bytes).toBeGreaterThan(0);
    expect(lines).toBe(30_000);
    expect(res.headers.get('etag')).toBe('"gen30000-s5-d0"');
  });
});
