import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// "Response body fields of every endpoint: not shown": a list page may wrap its reports in an object.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const report = (i: number) => ({
  id: `W-${String(i).padStart(2, '0')}`,
  status: 'SUBMITTED',
  destination: 'ROAD_CONTROL',
  createdAt: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString(),
  n: 1.0,
});

/** An upstream whose list pages are `wrap(reports of the page, page)`. */
async function upstream(count: () => number, wrap: (items: unknown[], page: number) => unknown) {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const rows = Array.from({ length: count() }, (_, i) => report(i));
    if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: rows.length }));
    if (url.pathname.endsWith('.ndjson')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      return void res.end(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    }
    const size = Number(url.searchParams.get('pageSize'));
    const page = Number(url.searchParams.get('page'));
    const newest = rows.reverse().slice((page - 1) * size, page * size);
    res.writeHead(200, { 'content-type': 'application/json' });
    // Numbers as sent: `1.0` stays `1.0` in `extra`.
    res.end(JSON.stringify(wrap(newest, page)).replaceAll('"n":1', '"n":1.0'));
  });
  onTestFinished(() => server.close());
  return server;
}

describe('recent against a list wrapped in an object', () => {
  it.each([
    ['{data, meta}', (items: unknown[], page: number) => ({ meta: { page }, data: items })],
    ['{items, total}', (items: unknown[]) => ({ items, total: 13 })],
    ['{data, errors: []}', (items: unknown[]) => ({ data: items, errors: [] })],
  ])('%s: the one array is the page', async (_, wrap) => {
    let n = 10;
    const server = await upstream(() => n, wrap);
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 2 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    await syncTargetOnce(warehouse, config, 'ndjson');
    n = 13;
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect(run?.counters.inserted).toBe(3);
    const rows = await query(
      warehouse,
      `SELECT id, extra::VARCHAR AS extra FROM reports WHERE id >= 'W-10' ORDER BY id`,
    );
    expect(rows).toEqual(['W-10', 'W-11', 'W-12'].map((id) => ({ id, extra: '{"n":1.0}' })));
  });

  it('{"data": null}, nothing published: an empty page', async () => {
    const server = await upstream(
      () => 0,
      () => ({ data: null, meta: { total: 0 } }),
    );
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect(run?.counters.recordsRead).toBe(0);
  });

  it('an object with no single array of reports fails with LIST_INVALID naming its keys', async () => {
    const server = await upstream(
      () => 3,
      (items) => ({ open: items, closed: [] }),
    );
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('LIST_INVALID');
    expect(run?.error?.message).toContain('keys: open, closed');
  });

  it('a 429 on a later list page is retried alone: page 1 is asked once', async () => {
    let limited = true;
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const rows = Array.from({ length: 10 }, (_, i) => report(i));
      if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: rows.length }));
      const size = Number(url.searchParams.get('pageSize'));
      const page = Number(url.searchParams.get('page'));
      if (page === 3 && limited) {
        limited = false;
        return void res.writeHead(429, { 'retry-after': '1' }).end();
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(rows.reverse().slice((page - 1) * size, page * size)));
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 3 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect(run?.counters.inserted).toBe(10);
    const pages = server.requests
      .filter((r) => r.url.includes('page='))
      .map((r) => new URL(r.url, 'http://x').searchParams.get('page'));
    expect(pages.filter((p) => p === '1')).toHaveLength(1);
    expect(pages.filter((p) => p === '3')).toHaveLength(2);
  });
});

describe('a list page that repeats a key', () => {
  /** An upstream whose one list page is `text(elements as JSON texts)`. */
  async function pageOf(text: (items: string[]) => string) {
    const items = Array.from({ length: 3 }, (_, i) => JSON.stringify(report(i)));
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: items.length }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Number(url.searchParams.get('page')) === 1 ? text(items) : '[]');
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { maxRejectRatio: 0.5 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    return { run, warehouse };
  }

  it('{"data": […], "data": […]}: which array is the page cannot be told, LIST_INVALID names the key', async () => {
    const { run } = await pageOf((items) => `{"data":[${items.slice(0, 2).join(',')}],"data":[${items[2]}]}`);
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('LIST_INVALID');
    expect(run?.error?.message).toContain('"data"');
  });

  it('a key repeated outside the array (in meta, or a total) does not hide the reports', async () => {
    for (const wrap of [
      (items: string[]) => `{"meta":{"page":1,"page":1},"data":[${items.join(',')}]}`,
      (items: string[]) => `{"total":3,"total":3,"data":[${items.join(',')}]}`,
    ]) {
      const { run } = await pageOf(wrap);
      expect(run?.status, run?.error?.message).toBe('succeeded');
      expect(run?.counters).toMatchObject({ recordsLoaded: 3, recordsRejected: 0 });
      tmp.cleanup();
      tmp = tempDir();
    }
  });

  it('an element in snake_case that repeats a key is quarantined naming it, not loaded with the first value', async () => {
    const snake = (item: string) =>
      item.replace('"createdAt"', '"created_at"').replace('"n":1', '"note":1,"note":2,"tail":3');
    const { run, warehouse } = await pageOf(
      (items) => `[${items.map((item, i) => (i === 1 ? snake(item) : item)).join(',')}]`,
    );
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect(run?.counters).toMatchObject({ recordsLoaded: 2, recordsRejected: 1 });
    const rejects = await query(
      warehouse,
      `SELECT record_id, page, "row", issues::VARCHAR AS issues FROM rejected_records`,
    );
    expect(rejects).toEqual([
      { record_id: 'W-01', page: 1, row: 2, issues: expect.stringContaining('duplicate key \\"note\\"') },
    ]);
  });
});
