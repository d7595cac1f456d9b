import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_PREFIX } from '../../src/schema/public-query.js';
import { validateWireReport } from '../../src/schema/report.js';
import { CSV_COLUMNS, WIRE_FIELDS } from '../../src/schema/wire-format.js';
import { API_TARGETS, type RunningApi } from './targets.js';

/**
 * The public API contract (seed rules 1–3, DESIGN.md §2), asserted the same way against every target:
 * the simulator and the reader. Nothing here knows which server answers.
 */

interface WireItem {
  id: string;
  status: string;
  destination: string;
  createdAt: string;
  location: { lat: number; lng: number } | null;
  [key: string]: unknown;
}

interface ErrorBody {
  error: { code: string; message: string; details?: Array<{ param: string; message: string }> };
}

describe.each(API_TARGETS)('public API contract: $name', (target) => {
  let api: RunningApi;
  const url = (path: string) => `${api.baseUrl}${PUBLIC_PREFIX}${path}`;
  const getJson = async <T>(path: string): Promise<T> => {
    const res = await fetch(url(path));
    expect(res.status, path).toBe(200);
    return (await res.json()) as T;
  };
  /** Every report the list pages through for a query (pageSize 1000), in order. */
  const listAll = async (query = ''): Promise<WireItem[]> => {
    const all: WireItem[] = [];
    for (let page = 1; ; page++) {
      const items = await getJson<WireItem[]>(
        `/reports?${query}${query ? '&' : ''}pageSize=1000&page=${page}`,
      );
      all.push(...items);
      if (items.length < 1000) return all;
    }
  };

  let everything: WireItem[];
  beforeAll(async () => {
    api = await target.start();
    everything = await listAll();
  });
  afterAll(async () => {
    await api?.close();
  });

  describe('GET /reports', () => {
    it('answers a JSON array of reports with the upstream field names, 50 by default', async () => {
      const res = await fetch(url('/reports'));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const items = (await res.json()) as WireItem[];
      expect(items).toHaveLength(50);
      for (const item of items)
        expect(Object.keys(item).slice(0, WIRE_FIELDS.length)).toEqual([...WIRE_FIELDS]);
      // Unknown upstream fields come after the known ones (the sample's `source`, `agency`, …).
      expect(items.some((i) => Object.keys(i).length > WIRE_FIELDS.length)).toBe(true);
    });

    it('lists the latest reports first when no filter is given (seed rule 3): createdAt desc, then id', () => {
      expect(everything.length).toBeGreaterThan(6000);
      for (let i = 1; i < everything.length; i++) {
        const a = everything[i - 1] as WireItem;
        const b = everything[i] as WireItem;
        const ordered = a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);
        expect(ordered, `${a.id} before ${b.id}`).toBe(true);
      }
      expect(new Set(everything.map((r) => r.id)).size).toBe(everything.length);
    });

    it('ANDs destination and status (seed rule 1)', async () => {
      const both = await listAll('destination=ROAD_CONTROL&status=SUBMITTED');
      const byDestination = await listAll('destination=ROAD_CONTROL');
      const byStatus = new Set((await listAll('status=SUBMITTED')).map((r) => r.id));
      expect(both.length).toBeGreaterThan(0);
      for (const r of both) expect([r.destination, r.status]).toEqual(['ROAD_CONTROL', 'SUBMITTED']);
      expect(both.map((r) => r.id)).toEqual(byDestination.filter((r) => byStatus.has(r.id)).map((r) => r.id));
      expect(await getJson('/reports?destination=NO_SUCH_AUTHORITY')).toEqual([]);
    });

    it('pages with pageSize and 1-based page; a page past the end is empty', async () => {
      const page3 = await getJson<WireItem[]>('/reports?pageSize=7&page=3');
      expect(page3.map((r) => r.id)).toEqual(everything.slice(14, 21).map((r) => r.id));
      const first = await getJson<WireItem[]>('/reports?page=1');
      expect(first.map((r) => r.id)).toEqual(everything.slice(0, 50).map((r) => r.id));
      expect(await getJson('/reports?page=100000')).toEqual([]);
    });
  });

  describe('GET /reports/stats', () => {
    it('counts what the list pages through, by status and by destination', async () => {
      const stats = await getJson<{
        total: number;
        byStatus: Record<string, number>;
        byDestination: Record<string, number>;
      }>('/reports/stats');
      expect(stats.total).toBe(everything.length);
      const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
      expect(sum(stats.byStatus)).toBe(stats.total);
      expect(sum(stats.byDestination)).toBe(stats.total);
      expect(stats.byStatus.SUBMITTED).toBe(everything.filter((r) => r.status === 'SUBMITTED').length);
      expect(stats.byDestination.ROAD_CONTROL).toBe(
        everything.filter((r) => r.destination === 'ROAD_CONTROL').length,
      );
    });
  });

  describe('GET /reports.geojson', () => {
    it('is an RFC 7946 FeatureCollection of Points [lng, lat] for the filtered reports with a location', async () => {
      const res = await fetch(url('/reports.geojson?destination=ROAD_CONTROL'));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/geo+json; charset=utf-8');
      const doc = (await res.json()) as {
        type: string;
        features: Array<{
          type: string;
          id: string;
          geometry: { type: string; coordinates: number[] };
          properties: WireItem;
        }>;
      };
      expect(doc.type).toBe('FeatureCollection');
      const expected = everything.filter((r) => r.destination === 'ROAD_CONTROL' && r.location !== null);
      expect(doc.features.map((f) => f.id)).toEqual(expected.map((r) => r.id));
      doc.features.forEach((f, i) => {
        const report = expected[i] as WireItem;
        expect(f.type).toBe('Feature');
        expect(f.geometry).toEqual({
          type: 'Point',
          coordinates: [report.location?.lng, report.location?.lat],
        });
        expect(f.properties).not.toHaveProperty('location');
        expect(f.properties.status).toBe(report.status);
      });
    });
  });

  describe('GET /reports.ndjson', () => {
    it('exports every listed report, one JSON object per line', async () => {
      const res = await fetch(url('/reports.ndjson'));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/x-ndjson');
      const lines = (await res.text()).split('\n');
      expect(lines.pop()).toBe('');
      const valid = lines.map((l) => validateWireReport(JSON.parse(l))).filter((v) => v.ok);
      // An upstream's export may leak bad records (the simulator's does); the valid ones are the list.
      expect(new Set(valid.map((v) => v.report.id))).toEqual(new Set(everything.map((r) => r.id)));
    });
  });

  describe('GET /reports.csv', () => {
    it('has the upstream columns, pageSize rows per page and a Link rel="next" to follow', async () => {
      const res = await fetch(url('/reports.csv?pageSize=100'));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      const text = await res.text();
      expect(text.endsWith('\r\n')).toBe(true);
      const rows = parse(text, { columns: true }) as Record<string, string>[];
      expect(rows).toHaveLength(100);
      expect(text.slice(0, text.indexOf('\r\n')).split(',').slice(0, CSV_COLUMNS.length)).toEqual([
        ...CSV_COLUMNS,
      ]);
      const link = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '');
      expect(link, 'Link header').not.toBeNull();
      // Relative unless the server has a trusted public base URL: resolved against the request (RFC 8288).
      const next = new URL(link?.[1] ?? '', res.url);
      expect(next.searchParams.get('pageSize')).toBe('100');
      expect(next.searchParams.get('page')).toBe('2');
      const second = parse(await (await fetch(next)).text(), { columns: true }) as Record<string, string>[];
      expect(second).toHaveLength(100);
      const firstIds = new Set(rows.map((r) => r.id));
      expect(second.some((r) => firstIds.has(r.id as string))).toBe(false);
    });

    it('holds the whole export across pages (as many rows as NDJSON lines); the last page has no Link', async () => {
      const ndjsonLines = (await (await fetch(url('/reports.ndjson'))).text()).split('\n').length - 1;
      let next: string | null = url('/reports.csv?pageSize=2000');
      let rows = 0;
      let pages = 0;
      while (next) {
        const res: Response = await fetch(next);
        rows += (parse(await res.text(), { columns: true, relax_column_count: true }) as unknown[]).length;
        pages++;
        const target = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
        next = target === undefined ? null : new URL(target, res.url).href;
      }
      expect(rows).toBe(ndjsonLines);
      expect(pages).toBe(Math.ceil(ndjsonLines / 2000));
      const past = await fetch(url('/reports.csv?pageSize=2000&page=99'));
      expect(past.headers.get('link')).toBeNull();
      expect((await past.text()).split('\r\n')).toHaveLength(2); // the header row only
    });
  });

  describe('errors', () => {
    it.each([
      ['/reports?pageSize=-1', 'pageSize'],
      ['/reports?pageSize=abc', 'pageSize'],
      ['/reports?pageSize=1001', 'pageSize'],
      ['/reports?page=0', 'page'],
      ['/reports?sort=id', 'sort'],
      ['/reports?status=A&status=B', 'status'],
      ['/reports?destination=', 'destination'],
      [`/reports?destination=${encodeURIComponent('ROAD_CONTROL\u0000')}`, 'destination'],
      [`/reports?status=${encodeURIComponent('SUBMITTED\n')}`, 'status'],
      [`/reports.geojson?destination=${encodeURIComponent(' ')}`, 'destination'],
      ['/reports.csv?pageSize=10001', 'pageSize'],
      ['/reports.geojson?page=2', 'page'],
      ['/reports.ndjson?since=2024-01-01', 'since'],
      ['/reports/stats?x=1', 'x'],
    ])('400 INVALID_QUERY naming the parameter for %s', async (path, param) => {
      const res = await fetch(url(path));
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const body = (await res.json()) as ErrorBody;
      expect(body.error.code).toBe('INVALID_QUERY');
      expect(body.error.details?.map((d) => d.param)).toEqual([param]);
      expect(body.error.message).toContain(param);
      expect(JSON.stringify(body)).not.toMatch(/SELECT|\n\s+at /);
    });

    it('404 NOT_FOUND for unknown paths', async () => {
      // `/` of the reader is its status page (an HTML page for operators, outside the public API).
      const unknown = ['/api/v1/public/nothing', '/api/v2/public/reports', '/api/v1/public/reports/'];
      if (target.name === 'simulator') unknown.push('/');
      for (const path of unknown) {
        const res = await fetch(`${api.baseUrl}${path}`);
        expect(res.status, path).toBe(404);
        expect(((await res.json()) as ErrorBody).error.code).toBe('NOT_FOUND');
      }
    });

    it('405 METHOD_NOT_ALLOWED with Allow: GET, HEAD for other methods', async () => {
      for (const path of [
        '/reports',
        '/reports.csv',
        '/reports.ndjson',
        '/reports.geojson',
        '/reports/stats',
      ]) {
        for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
          const res = await fetch(url(path), { method });
          expect(res.status, `${method} ${path}`).toBe(405);
          expect(res.headers.get('allow')).toBe('GET, HEAD');
          expect(((await res.json()) as ErrorBody).error.code).toBe('METHOD_NOT_ALLOWED');
        }
      }
    });
  });

  describe('validators', () => {
    it.each([
      '/reports?status=SUBMITTED',
      '/reports.geojson',
      '/reports.csv',
      '/reports.ndjson',
      '/reports/stats',
    ])('%s carries ETag and Last-Modified and answers 304 to a matching If-None-Match', async (path) => {
      const res = await fetch(url(path));
      await res.arrayBuffer();
      const etag = res.headers.get('etag');
      expect(etag).toMatch(/^"[^"]+"$/);
      expect(Number.isNaN(Date.parse(res.headers.get('last-modified') ?? ''))).toBe(false);
      const again = await fetch(url(path), { headers: { 'If-None-Match': `"other", ${etag}` } });
      expect(again.status).toBe(304);
      expect(again.headers.get('etag')).toBe(etag);
      expect(await again.text()).toBe('');
      const stale = await fetch(url(path), { headers: { 'If-None-Match': '"stale"' } });
      expect(stale.status).toBe(200);
      await stale.arrayBuffer();
    });

    it('answers HEAD with the headers of GET and no body', async () => {
      for (const path of ['/reports', '/reports.ndjson', '/reports.csv']) {
        const res = await fetch(url(path), { method: 'HEAD' });
        expect(res.status).toBe(200);
        expect(res.headers.get('etag')).toMatch(/^"/);
        expect(await res.text()).toBe('');
      }
    });
  });
});
