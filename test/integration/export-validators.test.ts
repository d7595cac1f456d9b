import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import type { ServerResponse } from 'node:http';
import { spawnCli } from '../helpers/cli-process.js';
import { csvRow } from '../helpers/paged-csv-server.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// What an answer's validators prove (docs/guarantees.md, "Deletes and completeness"; RFC 9110 §8.8): a
// validator only page 1 was shown to carry is not the export's, a Last-Modified is strong only with a `Date`
// a second later, and ETags compare weakly across pages.

const HEADER = 'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n';
const ids = (n: number, prefix = 'v') =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);
const ndjsonLine = (id: string, description: string) =>
  `${JSON.stringify({
    id,
    status: 'SUBMITTED',
    destination: 'ROAD_CONTROL',
    description,
    lat: 52.5,
    lng: 13.4,
    createdAt: '2024-01-01T00:00:00Z',
    updatedAt: '2024-01-02T00:00:00Z',
  })}\n`;
const json = (res: ServerResponse, body: unknown) =>
  void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('reports-sync-validators-');
});
afterEach(() => tmp.cleanup());

async function setup(url: string, overrides: Parameters<typeof testConfig>[2] = {}) {
  const config = testConfig(url, join(tmp.dir, 'w.duckdb'), { retries: 0, ...overrides });
  const warehouse = await openTestWarehouse(config);
  onTestFinished(() => warehouse.close());
  return { config, warehouse };
}

const current = async (warehouse: Awaited<ReturnType<typeof setup>>['warehouse']) =>
  (await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NULL ORDER BY id`)).map((r) => r.id);

/**
 * CSV pages of 3 rows of `served()`, each tagged with the hash of its own body (as servers hashing their
 * answer make it), honest 304s, a 404 past the last page, and a `/stats` total that counts them.
 */
async function perPageTagServer(served: () => string[]) {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/stats')) return json(res, { total: served().length });
    const page = Number(url.searchParams.get('page'));
    const rows = served().slice((page - 1) * 3, page * 3);
    if (rows.length === 0 && page > 1) return void res.writeHead(404).end('Not Found');
    const body = Buffer.from(HEADER + rows.map(csvRow).join(''));
    const etag = `"${createHash('sha1').update(body).digest('hex')}"`;
    if (req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
    res.writeHead(200, { 'content-type': 'text/csv', etag }).end(body);
  });
  onTestFinished(() => server.close());
  return server;
}

describe('CSV pages', () => {
  it('a per-page ETag on one full page, 404 past it: the next run reads a report published onto page 2', async () => {
    let served = ids(3);
    const server = await perPageTagServer(() => served);
    const { config, warehouse } = await setup(server.url, { csvPageSize: 3 });
    await syncTargetOnce(warehouse, config, 'csv');
    served = [...served, 'v-03'];
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    expect(await current(warehouse)).toEqual(served);
  });

  it('a Last-Modified without Date proves no version: a report sliding across pages is never tombstoned', async () => {
    let served = ids(30);
    const server = await startRawServer((req, res) => {
      res.sendDate = false; // legal for a server without a clock (RFC 9110 §6.6.1)
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return json(res, { total: served.length });
      const page = Number(url.searchParams.get('page'));
      // Unpublished between the reads of pages 1 and 2 of the second run: v-10 slides onto page 1, unread.
      if (page === 2 && served.length === 30 && server.requests.length > 6)
        served = served.filter((id) => id !== 'v-05');
      const body =
        HEADER +
        served
          .slice((page - 1) * 10, page * 10)
          .map(csvRow)
          .join('');
      // Both changes fall in one second: every page carries the same Last-Modified.
      res
        .writeHead(200, { 'content-type': 'text/csv', 'last-modified': 'Mon, 01 Jan 2024 00:00:00 GMT' })
        .end(body);
    });
    onTestFinished(() => server.close());
    const { config, warehouse } = await setup(server.url, { csvPageSize: 10, conditionalExports: false });
    await syncTargetOnce(warehouse, config, 'csv');
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    const removed = await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NOT NULL`);
    expect(removed.filter((r) => served.includes(String(r.id)))).toEqual([]);
    const [log] = await query(
      warehouse,
      `SELECT tombstones_note FROM sync_runs ORDER BY started_at DESC LIMIT 1`,
    );
    expect(String(log?.tombstones_note)).toContain('neither ETag nor Last-Modified');
  });

  it('ETags weak on full pages and strong on the short last one (compressed or not) name one version', async () => {
    let served = ids(25);
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return json(res, { total: served.length });
      const page = Number(url.searchParams.get('page'));
      const rows = served.slice((page - 1) * 10, page * 10);
      const version = `"${createHash('sha1').update(served.join()).digest('hex')}"`;
      const etag = rows.length === 10 ? `W/${version}` : version;
      res.writeHead(200, { 'content-type': 'text/csv', etag }).end(HEADER + rows.map(csvRow).join(''));
    });
    onTestFinished(() => server.close());
    const { config, warehouse } = await setup(server.url, { csvPageSize: 10, conditionalExports: false });
    await syncTargetOnce(warehouse, config, 'csv');
    served = served.filter((id) => id !== 'v-12');
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect([run?.status, run?.counters.removed]).toEqual(['succeeded', 1]);
    expect(await current(warehouse)).toEqual(served);
  });

  it('a 204 (no content) past the last page is an empty page: the export ends complete, deletes inferred', async () => {
    let served = ids(12);
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return json(res, { total: served.length });
      const page = Number(url.searchParams.get('page'));
      const rows = served.slice((page - 1) * 3, page * 3);
      if (rows.length === 0) return void res.writeHead(204).end();
      const etag = `"${createHash('sha1').update(served.join()).digest('hex')}"`;
      res.writeHead(200, { 'content-type': 'text/csv', etag }).end(HEADER + rows.map(csvRow).join(''));
    });
    onTestFinished(() => server.close());
    const { config, warehouse } = await setup(server.url, { csvPageSize: 3, conditionalExports: false });
    const [first] = await syncTargetOnce(warehouse, config, 'csv');
    expect([first?.status, first?.incompleteReason, first?.counters.recordsLoaded]).toEqual([
      'succeeded',
      undefined,
      12,
    ]);
    // Still four full pages, then the 204: one report gone, one new (12 of 13: past the minimum share).
    served = [...served.filter((id) => id !== 'v-04'), 'v-12'];
    const [second] = await syncTargetOnce(warehouse, config, 'csv');
    expect([second?.status, second?.counters.inserted, second?.counters.removed]).toEqual([
      'succeeded',
      1,
      1,
    ]);
    expect(await current(warehouse)).toEqual(served);
  });

  it('a run resumed after page 1 that meets the end past it does not keep page 1’s own tag', async () => {
    let served = ids(3);
    const server = await perPageTagServer(() => served);
    // Killed once page 1 and its checkpoint are committed: page 1's tag is all the run has recorded.
    const killed = spawnCli(['sync', '--source', 'csv', '--page-size', '3'], {
      REPORTS_BASE_URL: server.url,
      REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb'),
      REPORTS_BATCH_SIZE: '3',
      REPORTS_FAILPOINT: 'after-page-batch',
    });
    await killed.waitFor(/failpoint after-page-batch reached/);
    killed.child.kill('SIGKILL');
    await killed.exited;
    const { config, warehouse } = await setup(server.url, { csvPageSize: 3, batchSize: 3 });
    const [resumed] = await syncTargetOnce(warehouse, config, 'csv');
    expect(resumed?.status).toBe('succeeded');
    const log = await query(warehouse, `SELECT resumed_at_page FROM sync_runs WHERE run_id = $run`, {
      run: resumed!.runId,
    });
    expect(log).toEqual([{ resumed_at_page: 2 }]);
    served = [...served, 'v-03'];
    const [next] = await syncTargetOnce(warehouse, config, 'csv');
    expect(next?.status).toBe('succeeded');
    expect(await current(warehouse)).toEqual(served);
  });
});

describe('the NDJSON export', () => {
  it('a Last-Modified in the second of the answer is not sent back: a change later in that second is read', async () => {
    let description = 'first';
    const stamp = 'Mon, 01 Jan 2024 00:00:00 GMT';
    const server = await startRawServer((req, res) => {
      res.sendDate = false;
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return json(res, { total: 2 });
      // An honest server: nothing changed after the second the client names.
      if (req.headers['if-modified-since'] === stamp) return void res.writeHead(304).end();
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'last-modified': stamp, date: stamp });
      res.end(ndjsonLine('a', description) + ndjsonLine('b', 'b'));
    });
    onTestFinished(() => server.close());
    const { config, warehouse } = await setup(server.url);
    await syncTargetOnce(warehouse, config, 'ndjson');
    description = 'changed within the same second';
    await syncTargetOnce(warehouse, config, 'ndjson');
    expect(await query(warehouse, `SELECT description FROM reports WHERE id = 'a'`)).toEqual([
      { description },
    ]);
  });

  it('a Last-Modified a second or more before Date is sent back as If-Modified-Since', async () => {
    const server = await startRawServer((req, res) => {
      res.sendDate = false;
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return json(res, { total: 1 });
      const modified = 'Mon, 01 Jan 2024 00:00:00 GMT';
      if (req.headers['if-modified-since'] === modified) return void res.writeHead(304).end();
      res.writeHead(200, {
        'content-type': 'application/x-ndjson',
        'last-modified': modified,
        date: 'Mon, 01 Jan 2024 00:00:01 GMT',
      });
      res.end(ndjsonLine('a', 'a'));
    });
    onTestFinished(() => server.close());
    const { config, warehouse } = await setup(server.url);
    await syncTargetOnce(warehouse, config, 'ndjson');
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect([run?.status, run?.notModified]).toEqual(['succeeded', true]);
  });
});

describe('the list (recent)', () => {
  it.each([
    ['page 1 (nothing published)', 0],
    ['page 2 (past the end)', 3],
  ])('a 204 on %s is an empty list', async (_name, count) => {
    const served = ids(count, 'n');
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return json(res, { total: served.length });
      const page = Number(url.searchParams.get('page') ?? 1);
      const size = Number(url.searchParams.get('pageSize'));
      const rows = served.slice((page - 1) * size, page * size);
      if (rows.length === 0) return void res.writeHead(204).end();
      json(
        res,
        rows.map((id) => JSON.parse(ndjsonLine(id, id)) as unknown),
      );
    });
    onTestFinished(() => server.close());
    const { config, warehouse } = await setup(server.url, { recentPageSize: 3 });
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    expect([run?.status, run?.error?.message, run?.counters.recordsLoaded]).toEqual([
      'succeeded',
      undefined,
      count,
    ]);
  });
});
