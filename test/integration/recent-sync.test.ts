import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import type { DatasetSnapshot } from '../../src/simulator/dataset-snapshot.js';
import { startRawServer } from '../helpers/raw-server.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { recentSource } from '../../src/sync/sources/recent-source.js';
import { openTestWarehouse, query, syncOnce, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const PAGE_SIZE = 8;

/** Requests to the list endpoint (`/reports?…`), not the exports or /stats. */
function listRequests(sim: TestSimulator): string[] {
  return sim
    .requests()
    .map((r) => r.path)
    .filter((p) => /^\/api\/v1\/public\/reports\?/.test(p));
}

/**
 * How many list pages a `recent` run must read after `before` became `after`: up to and including the first
 * page whose reports were all published in `before` (or the end of the list).
 */
function pagesToCatchUp(before: DatasetSnapshot, after: DatasetSnapshot, pageSize: number): number {
  for (let page = 1; ; page++) {
    const rows = after.query({}, (page - 1) * pageSize, pageSize);
    if (rows.length < pageSize) return page;
    if (!rows.every((r) => before.getReport(r.id) !== undefined)) continue;
    // Caught up once the reports created at the last one's instant are all read: at the next page holding
    // an older one, or the end of the list.
    const tieAt = Date.parse(rows[rows.length - 1]!.createdAt);
    for (let next = page + 1; ; next++) {
      const more = after.query({}, (next - 1) * pageSize, pageSize);
      if (more.length < pageSize || more.some((r) => Date.parse(r.createdAt) < tieAt)) return next;
    }
  }
}

async function current(warehouse: Parameters<typeof query>[0]) {
  const rows = await query(warehouse, `SELECT id, status FROM reports WHERE removed_at IS NULL`);
  return new Map(rows.map((r) => [String(r.id), String(r.status)]));
}

describe('sync --source recent', () => {
  it('after a simulated day picks up every new report with ceil(new / pageSize) + 2 list requests, infers no delete, and the next full export reconciles the rest', async () => {
    const sim = await startTestSimulator({ generate: { n: 7300, seed: 3 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { recentPageSize: PAGE_SIZE });
    const warehouse = await openTestWarehouse(config);
    try {
      expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
      const before = sim.dataset.snapshot();
      const day = sim.advanceDays(1);
      const after = sim.dataset.snapshot();
      expect(day.added).toBeGreaterThan(PAGE_SIZE);
      expect(day.unpublished).toBeGreaterThan(0);
      sim.clearRequests();

      const [run] = await syncTargetOnce(warehouse, config, 'recent');
      expect(run?.status).toBe('succeeded');
      expect(run?.source).toBe('recent');
      const expectedPages = pagesToCatchUp(before, after, PAGE_SIZE);
      expect(listRequests(sim)).toHaveLength(expectedPages);
      // The new reports' pages, the first page of known ones, and the page after it (no tie at its end).
      expect(expectedPages).toBe(Math.ceil(day.added / PAGE_SIZE) + 2);
      expect(day.moved).toBeGreaterThan(0);
      expect(run?.counters.inserted).toBe(day.added);

      const mirror = await current(warehouse);
      // Every report on the pages read is current: the new ones, and the status moves among them.
      for (const r of after.query({}, 0, expectedPages * PAGE_SIZE)) expect(mirror.get(r.id)).toBe(r.status);
      const removed = await query(
        warehouse,
        `SELECT count(*)::INTEGER AS n FROM reports WHERE removed_at IS NOT NULL`,
      );
      expect(removed[0]?.n).toBe(0);
      const logged = await query(
        warehouse,
        `SELECT source, status, inserted::INTEGER AS inserted, removed::INTEGER AS removed FROM sync_runs WHERE run_id = $run`,
        { run: run!.runId },
      );
      expect(logged[0]).toEqual({ source: 'recent', status: 'succeeded', inserted: day.added, removed: 0 });

      // The next full export brings the status moves of older reports and the unpublished ones.
      expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
      const published = new Map([...after.published()].map((r) => [r.id, r.status]));
      expect(await current(warehouse)).toEqual(published);
    } finally {
      await warehouse.close();
    }
  });

  it('a second run with no change makes two list requests (a known page, then the one after it) and writes no version', async () => {
    const sim = await startTestSimulator({ generate: { n: 500, seed: 5 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 50 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [first] = await syncTargetOnce(warehouse, config, 'recent');
      expect(first?.status).toBe('succeeded');
      expect(first?.counters.inserted).toBe(500);
      const versions = await query(warehouse, `SELECT count(*)::INTEGER AS n FROM report_versions`);
      sim.clearRequests();
      const [second] = await syncTargetOnce(warehouse, config, 'recent');
      expect(second?.status).toBe('succeeded');
      expect(listRequests(sim)).toEqual([
        '/api/v1/public/reports?pageSize=50&page=1',
        '/api/v1/public/reports?pageSize=50&page=2',
      ]);
      expect(sim.requests()).toHaveLength(2);
      expect(second?.counters).toMatchObject({ inserted: 0, updated: 0, revived: 0, removed: 0 });
      expect(await query(warehouse, `SELECT count(*)::INTEGER AS n FROM report_versions`)).toEqual(versions);
    } finally {
      await warehouse.close();
    }
  });

  it('a server that ignores `page` ends the run as incomplete after the repeated page, with what it read merged', async () => {
    const sim = await startTestSimulator({ generate: { n: 100, seed: 2 }, faults: ['list:ignorePage'] });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 10 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'recent');
      expect(run?.status).toBe('succeeded');
      expect(listRequests(sim)).toHaveLength(2);
      expect(run?.counters.inserted).toBe(10);
      const logged = await query(warehouse, `SELECT complete FROM sync_runs WHERE run_id = $run`, {
        run: run!.runId,
      });
      expect(logged[0]?.complete).toBe(false);
      // The summary a person or a script reads says so, and why.
      expect(run?.incompleteReason).toMatch(/repeats page 1/);
    } finally {
      await warehouse.close();
    }
  });

  it('stops after REPORTS_RECENT_MAX_PAGES pages as incomplete', async () => {
    const sim = await startTestSimulator({ generate: { n: 100, seed: 2 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 10, recentMaxPages: 3 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'recent');
      expect(run?.status).toBe('succeeded');
      expect(listRequests(sim)).toHaveLength(3);
      expect(run?.counters.inserted).toBe(30);
      const logged = await query(warehouse, `SELECT complete FROM sync_runs WHERE run_id = $run`, {
        run: run!.runId,
      });
      expect(logged[0]?.complete).toBe(false);
    } finally {
      await warehouse.close();
    }
  });

  it('reports progress while it reads, though the run is far shorter than a batch', async () => {
    const sim = await startTestSimulator({ generate: { n: 60, seed: 2 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 10 });
    const warehouse = await openTestWarehouse(config);
    try {
      const seen: number[] = [];
      const lookup = await warehouse.connect();
      const run = await syncOnce(warehouse, config, recentSource(lookup), (p) =>
        seen.push(p.counters.recordsRead),
      );
      lookup.closeSync();
      expect(run.status).toBe('succeeded');
      expect(seen.filter((n) => n > 0 && n < 60).length).toBeGreaterThan(0); // mid-run, not only at the end
    } finally {
      await warehouse.close();
      await sim.close();
    }
  });

  it('reads every new report from a list that serves fewer than pageSize asks (a cap), and a 404 past its end', async () => {
    const sim = await startTestSimulator({ generate: { n: 25, seed: 2 } });
    const all = (await (await fetch(sim.api('/reports?pageSize=100'))).json()) as unknown[];
    const server = await startRawServer((req, res) => {
      const page = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('page'));
      const rows = all.slice((page - 1) * 10, page * 10); // 10 a page, whatever is asked
      if (rows.length === 0) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(rows));
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 20 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'recent');
      expect([run?.status, run?.counters.inserted, run?.incompleteReason]).toEqual([
        'succeeded',
        25,
        undefined,
      ]);
    } finally {
      await warehouse.close();
      await sim.close();
    }
  });

  it('reads a list page that starts with a UTF-8 BOM', async () => {
    const sim = await startTestSimulator({ generate: { n: 5, seed: 2 } });
    const valid = await (await fetch(sim.api('/reports?pageSize=10'))).text();
    const server = await startRawServer((req, res) => {
      const first = new URL(req.url ?? '/', 'http://x').searchParams.get('page') === '1';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(first ? `\ufeff${valid}` : '[]');
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 10 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'recent');
      expect([run?.status, run?.counters.recordsLoaded]).toEqual(['succeeded', 5]);
    } finally {
      await warehouse.close();
      await sim.close();
    }
  });

  it('quarantines a list element that fails validation with its page and row, and merges the rest', async () => {
    const sim = await startTestSimulator({ generate: { n: 5, seed: 2 } });
    const valid = (await (await fetch(sim.api('/reports?pageSize=10'))).json()) as Record<string, unknown>[];
    const body = JSON.stringify([valid[0], { ...valid[1], status: 42 }, 'not an object', ...valid.slice(2)]);
    const server = await startRawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, {
      recentPageSize: 10,
      maxRejectRatio: 0.5,
    });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'recent');
      expect(run?.status).toBe('succeeded');
      expect(run?.counters).toMatchObject({
        recordsRead: 6,
        recordsLoaded: 4,
        recordsRejected: 2,
        inserted: 4,
      });
      const rejected = await query(
        warehouse,
        `SELECT source, location, page, "row"::INTEGER AS "row", record_id FROM rejected_records ORDER BY "row"`,
      );
      expect(rejected).toEqual([
        { source: 'recent', location: 'page 1, row 2', page: 1, row: 2, record_id: valid[1]!.id },
        { source: 'recent', location: 'page 1, row 3', page: 1, row: 3, record_id: null },
      ]);
    } finally {
      await warehouse.close();
    }
  });
});
