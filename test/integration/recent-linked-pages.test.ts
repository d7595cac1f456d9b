import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// "Paging parameters other than `pageSize` … not shown": a list paged by cursor ignores `page` and names
// its next page, in a `Link` header or in its body; the `recent` source follows it.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const report = (i: number) => ({
  id: `L-${String(i).padStart(2, '0')}`,
  status: 'SUBMITTED',
  destination: 'ROAD_CONTROL',
  createdAt: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString(),
});

type Naming = (
  rows: unknown[],
  next: string | undefined,
) => { headers: Record<string, string>; body: unknown };

/** A list of `count` reports, newest first, paged by `cursor` (any `page` ignored), naming its next page by `naming`. */
async function cursorList(count: number, naming: Naming, loop = false) {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const newest = Array.from({ length: count }, (_, i) => report(i)).reverse();
    const size = 4;
    const at = Number(url.searchParams.get('cursor') ?? 0);
    const more = at + size < newest.length || loop;
    const next = more ? `/api/v1/public/reports?cursor=${loop ? 0 : at + size}` : undefined;
    const { headers, body } = naming(newest.slice(at, at + size), next);
    res.writeHead(200, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  });
  onTestFinished(() => server.close());
  return server;
}

const namings: [string, Naming][] = [
  [
    'a Link header',
    (rows, next) => ({
      headers: next ? { link: `<${next}>; rel="next"` } : ({} as Record<string, string>),
      body: rows,
    }),
  ],
  ['"next" in the body', (rows, next) => ({ headers: {}, body: { data: rows, next: next ?? null } })],
  ['"links.next" in the body', (rows, next) => ({ headers: {}, body: { data: rows, links: { next } } })],
];

describe('recent against a list that names its next page', () => {
  it.each(namings)('%s: every page is read by its link, and the run is complete', async (_, naming) => {
    const server = await cursorList(10, naming);
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 4 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect(run?.counters.inserted).toBe(10);
    expect(await query(warehouse, `SELECT count(*)::INT AS n FROM reports`)).toEqual([{ n: 10 }]);
    const complete = await query(warehouse, `SELECT complete FROM sync_runs`);
    expect(complete).toEqual([{ complete: true }]);
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/v1/public/reports?pageSize=4&page=1',
      '/api/v1/public/reports?cursor=4',
      '/api/v1/public/reports?cursor=8',
    ]);
  });

  it('a link back to a page already read stops the run incomplete, keeping what it read', async () => {
    const server = await cursorList(10, namings[0]![1], true);
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 4 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect(run?.counters.inserted).toBe(4);
    const [row] = await query(warehouse, `SELECT complete FROM sync_runs`);
    expect(row).toEqual({ complete: false });
    expect(server.requests.length).toBeLessThanOrEqual(3);
  });

  it('an empty page that links on mid-list is read past: the reports after it are loaded, a re-run loads nothing', async () => {
    const pages: Record<string, { rows: unknown[]; next?: string }> = {
      '': { rows: [report(9), report(8)], next: '/api/v1/public/reports?cursor=b' },
      b: { rows: [], next: '/api/v1/public/reports?cursor=c' },
      c: { rows: [report(7), report(6)] },
    };
    const server = await startRawServer((req, res) => {
      const page = pages[new URL(req.url ?? '/', 'http://x').searchParams.get('cursor') ?? '']!;
      const link = page.next ? { link: `<${page.next}>; rel="next"` } : ({} as Record<string, string>);
      res.writeHead(200, { 'content-type': 'application/json', ...link }).end(JSON.stringify(page.rows));
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 2 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'recent');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    const ids = await query(warehouse, 'SELECT id FROM reports ORDER BY id');
    expect(ids.map((r) => r.id)).toEqual(['L-06', 'L-07', 'L-08', 'L-09']);
    const [again] = await syncTargetOnce(warehouse, config, 'recent');
    expect(again?.counters).toMatchObject({ inserted: 0, updated: 0, removed: 0 });
  });
});
