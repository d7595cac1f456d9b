import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// The upstream shows no list fields ("Response body fields of every endpoint: not shown"): a list of
// summaries must not blank what it leaves out, nor make a version with every run.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

interface Row {
  id: string;
  status: string;
  createdAt: string;
  [key: string]: unknown;
}

const full = (i: number, status = 'SUBMITTED'): Row => ({
  id: `R-${String(i).padStart(2, '0')}`,
  status,
  destination: 'ROAD_CONTROL',
  category: 'POTHOLE',
  description: `report ${i}`,
  // NYC 311's (Socrata) shape: a key of the location besides its coordinates.
  location: { latitude: '52.5', longitude: '13.4', human_address: `{"address": "Main St ${i}"}` },
  address: `Main St ${i}`,
  createdAt: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString(),
  updatedAt: new Date(Date.UTC(2024, 0, 2, 0, i)).toISOString(),
  zone: 'north',
  ward: 7,
});

/**
 * The list's element of a report: a summary (`id`, `status`, `destination`, `createdAt`, a location, the
 * second of two unknown fields), plus `url`. The location as coordinates, or the report's own object.
 */
const summaries = {
  coordinates: (r: Row) => ({
    id: r.id,
    status: r.status,
    destination: r.destination,
    lat: 52.5,
    lng: 13.4,
    createdAt: r.createdAt,
    ward: r.ward,
    url: `https://example.org/r/${r.id}`,
  }),
  'the location object': (r: Row) => ({
    id: r.id,
    status: r.status,
    destination: r.destination,
    location: r.location,
    createdAt: r.createdAt,
    ward: r.ward,
    url: `https://example.org/r/${r.id}`,
  }),
};

/** NDJSON export of whole reports, a list of summaries newest first, and /stats. */
async function upstream(rows: Row[], summary: (r: Row) => Record<string, unknown>) {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: rows.length }));
    if (url.pathname.endsWith('.ndjson')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      return void res.end(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    }
    const size = Number(url.searchParams.get('pageSize'));
    const page = Number(url.searchParams.get('page'));
    const newest = [...rows].sort(
      (a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id),
    );
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(newest.slice((page - 1) * size, page * size).map(summary)));
  });
  onTestFinished(() => server.close());
  return server;
}

describe('recent against a list of summaries', () => {
  it.each(Object.entries(summaries))(
    'keeps what the list leaves out, merges what it changes, and makes no version of its own (a location as %s)',
    async (_name, summary) => {
      const rows = Array.from({ length: 12 }, (_, i) => full(i));
      const server = await upstream(rows, summary);
      const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 5 });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      const stored = () =>
        query(
          warehouse,
          `SELECT id, status, description, address, updated_at::VARCHAR AS updated, extra::VARCHAR AS extra
         FROM current_reports ORDER BY id`,
        );
      const versions = async () =>
        (await query(warehouse, `SELECT count(*)::INTEGER AS n FROM report_versions`))[0]?.n;

      expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
      const loaded = await stored();
      expect(await versions()).toBe(12);
      // Unchanged upstream: any order of full and recent runs keeps the reports as the export gives them.
      for (const source of ['recent', 'ndjson', 'recent', 'recent'] as const) {
        const [run] = await syncTargetOnce(warehouse, config, source);
        expect([source, run?.status, run?.counters.updated]).toEqual([source, 'succeeded', 0]);
        expect(await stored()).toEqual(loaded);
      }
      expect(await versions()).toBe(12);

      // A status move and a new report, seen first through the list.
      rows[11] = { ...rows[11]!, status: 'RESOLVED' };
      rows.push(full(30));
      const [run] = await syncTargetOnce(warehouse, config, 'recent');
      expect(run?.counters).toMatchObject({ inserted: 1, updated: 1 });
      const now = await stored();
      const moved = now.find((r) => r.id === 'R-11');
      expect(moved).toEqual({ ...loaded.find((r) => r.id === 'R-11'), status: 'RESOLVED' });
      // The new report has what the list gave: its unknown field `url` too, until a full export says otherwise.
      expect(now.find((r) => r.id === 'R-30')).toMatchObject({ description: null, address: null });
      expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
      expect((await stored()).find((r) => r.id === 'R-30')).toMatchObject({ description: 'report 30' });
    },
  );
});
