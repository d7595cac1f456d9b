import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// The seed shows neither the NDJSON export's path nor whether it pages: an export may answer in pages
// linked by `Link: rel="next"`. Every page is read; nothing past page 1 is lost or taken for the whole.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const report = (i: number) =>
  JSON.stringify({
    id: `r-${String(i).padStart(3, '0')}`,
    status: 'SUBMITTED',
    destination: 'ROAD_CONTROL',
    createdAt: `2024-01-01T00:00:${String(i % 60).padStart(2, '0')}Z`,
  });

/** How the upstream pages its NDJSON export. */
interface Paging {
  /** Lines per page. */
  size: number;
  /** `same`: every page carries the export's ETag; `none`: no validator; `page`: one tag per page. */
  tags: 'same' | 'none' | 'page';
  /** Pages whose body ends without a final `\n` (its last line complete all the same). */
  unterminated?: Set<number>;
  /** The last page links back to page 1. */
  loop?: boolean;
  /** Every page links on, past the last line too (then empty pages, or `pastEndStatus`). */
  linksPastEnd?: boolean;
  /** A page past the last answers the last page again (with `linksPastEnd`: a server clamping `page`). */
  clamp?: boolean;
  /** The status a page past the last answers (instead of an empty page). */
  pastEndStatus?: number;
  /** The first request of this page is answered 429 with `Retry-After: 1`. */
  rateLimitedPage?: number;
}

/** Serves `lines` (each one line of the export) in pages of `paging.size`, `/stats` counting `total`. */
async function pagedUpstream(lines: string[], total: number, paging: Paging) {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total }));
    const page = Number(url.searchParams.get('page') ?? '1');
    const pages = Math.max(1, Math.ceil(lines.length / paging.size));
    if (paging.pastEndStatus !== undefined && page > pages)
      return void res.writeHead(paging.pastEndStatus).end();
    if (paging.rateLimitedPage === page) {
      paging.rateLimitedPage = undefined;
      return void res.writeHead(429, { 'retry-after': '1' }).end();
    }
    const served = paging.clamp ? Math.min(page, pages) : page;
    const body = lines.slice((served - 1) * paging.size, served * paging.size).join('\n');
    const headers: Record<string, string> = { 'content-type': 'application/x-ndjson' };
    if (paging.tags === 'same') headers.etag = `"export-${total}"`;
    if (paging.tags === 'page') headers.etag = `"page-${page}"`;
    const next = page < pages || paging.linksPastEnd ? page + 1 : paging.loop ? 1 : undefined;
    if (headers.etag !== undefined && req.headers['if-none-match'] === headers.etag) {
      return void res.writeHead(304, { etag: headers.etag }).end();
    }
    if (next !== undefined) headers.link = `</api/v1/public/reports.ndjson?page=${next}>; rel="next"`;
    res.writeHead(200, headers);
    res.end(body.length === 0 || paging.unterminated?.has(page) ? body : `${body}\n`);
  });
  onTestFinished(() => server.close());
  return server;
}

/** A first NDJSON sync from `url` into a fresh warehouse (closed when the test ends), and its run. */
async function firstSync(url: string) {
  const config = testConfig(url, `${tmp.dir}/w.duckdb`);
  const warehouse = await openTestWarehouse(config);
  onTestFinished(() => warehouse.close());
  const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
  return { warehouse, run };
}

async function runRow(warehouse: Parameters<typeof query>[0], runId: string) {
  const [row] = await query(
    warehouse,
    `SELECT status, complete, records_read::INTEGER AS read, records_loaded::INTEGER AS loaded,
            records_rejected::INTEGER AS rejected, export_etag, tombstones_note
     FROM sync_runs WHERE run_id = $run`,
    { run: runId },
  );
  return row;
}

describe('a paged NDJSON export', () => {
  it('every line of every page is loaded or quarantined, located by page and line (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 9 }),
        fc.uniqueArray(fc.nat(60), { maxLength: 4 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 12 }), { maxLength: 4 }),
        async (n, size, brokenAt, unterminated) => {
          const lines = Array.from({ length: n }, (_, i) => report(i));
          const broken = brokenAt.filter((i) => i < n);
          for (const i of broken) lines[i] = `not json ${i}`;
          const server = await pagedUpstream(lines, n - broken.length, {
            size,
            tags: 'same',
            unterminated: new Set(unterminated),
          });
          const config = testConfig(server.url, `${tmp.dir}/w-${Math.random()}.duckdb`, {
            maxRejectRatio: 1,
            retries: 0,
          });
          const warehouse = await openTestWarehouse(config);
          onTestFinished(() => warehouse.close());
          const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
          expect(run?.status, run?.error?.message).toBe('succeeded');
          expect(await runRow(warehouse, run!.runId)).toMatchObject({
            complete: true,
            read: n,
            loaded: n - broken.length,
            rejected: broken.length,
          });
          const [{ ids }] = (await query(
            warehouse,
            `SELECT list(id ORDER BY id) AS ids FROM reports WHERE removed_at IS NULL`,
          )) as [{ ids: string[] }];
          const expected = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l).id as string);
          expect(ids ?? []).toEqual(expected.sort());
          const rejects = await query(
            warehouse,
            `SELECT raw, location, page::INTEGER AS page, line::INTEGER AS line FROM rejected_records ORDER BY raw`,
          );
          const where = (i: number) => ({ page: Math.floor(i / size) + 1, line: (i % size) + 1 });
          const paged = n > size;
          expect(rejects).toEqual(
            broken
              .map((i) => ({
                raw: `not json ${i}`,
                location: paged ? `page ${where(i).page}, line ${where(i).line}` : `line ${i + 1}`,
                page: paged ? where(i).page : null,
                line: paged ? where(i).line : i + 1,
              }))
              .sort((a, b) => (a.raw < b.raw ? -1 : 1)),
          );
          warehouse.close();
        },
      ),
      { numRuns: 15 },
    );
  });

  it('pages of one ETag are one version: deletes are inferred and the next run is conditional', async () => {
    const lines = Array.from({ length: 25 }, (_, i) => report(i));
    const first = await pagedUpstream(lines, 25, { size: 10, tags: 'same' });
    const file = `${tmp.dir}/w.duckdb`;
    const warehouse = await openTestWarehouse(testConfig(first.url, file));
    onTestFinished(() => warehouse.close());
    expect((await syncTargetOnce(warehouse, testConfig(first.url, file), 'ndjson'))[0]?.status).toBe(
      'succeeded',
    );
    // Two reports unpublished: one on page 1, one on page 3.
    const next = await pagedUpstream(
      lines.filter((_, i) => i !== 3 && i !== 22),
      23,
      { size: 10, tags: 'same' },
    );
    const [run] = await syncTargetOnce(warehouse, testConfig(next.url, file), 'ndjson');
    expect(await runRow(warehouse, run!.runId)).toMatchObject({ complete: true, export_etag: '"export-23"' });
    expect(run?.counters.removed).toBe(2);
    const removed = await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NOT NULL ORDER BY id`);
    expect(removed.map((r) => r.id)).toEqual(['r-003', 'r-022']);
    const [again] = await syncTargetOnce(warehouse, testConfig(next.url, file), 'ndjson');
    expect(again?.notModified).toBe(true);
    expect(next.requests.at(-1)?.headers['if-none-match']).toBe('"export-23"');
  });

  it.each(['none', 'page'] as const)(
    'pages with %s validators cannot be proven one version: complete, no deletes, no validator recorded',
    async (tags) => {
      const lines = Array.from({ length: 25 }, (_, i) => report(i));
      const file = `${tmp.dir}/w.duckdb`;
      const first = await pagedUpstream(lines, 25, { size: 10, tags });
      const warehouse = await openTestWarehouse(testConfig(first.url, file));
      onTestFinished(() => warehouse.close());
      await syncTargetOnce(warehouse, testConfig(first.url, file), 'ndjson');
      const next = await pagedUpstream(
        lines.filter((_, i) => i !== 3),
        24,
        { size: 10, tags },
      );
      const [run] = await syncTargetOnce(warehouse, testConfig(next.url, file), 'ndjson');
      const row = await runRow(warehouse, run!.runId);
      expect(row).toMatchObject({ status: 'succeeded', complete: true, read: 24, export_etag: null });
      expect(String(row?.tombstones_note)).toMatch(/cannot be proven to be of one version/);
      expect(run?.counters.removed).toBe(0);
    },
  );

  it.each([
    [25, true],
    [30, false],
  ])(
    'a server linking on past its last line (then empty pages), /stats %s: ends after a few empty pages, complete: %s',
    async (total, complete) => {
      const lines = Array.from({ length: 25 }, (_, i) => report(i));
      const server = await pagedUpstream(lines, total, { size: 10, tags: 'same', linksPastEnd: true });
      const { warehouse, run } = await firstSync(server.url);
      const row = await runRow(warehouse, run!.runId);
      expect(row).toMatchObject({ status: 'succeeded', complete, read: 25, loaded: 25 });
      if (!complete) expect(String(row?.tombstones_note)).toMatch(/empty pages in a row .* still link on/);
      // 3 data pages and 11 empty ones (MAX_EMPTY_LINKED_PAGES + 1): not REPORTS_CSV_MAX_PAGES of them.
      expect(server.requests.filter((r) => r.url.includes('.ndjson')).length).toBe(14);
    },
  );

  it.each([
    [25, true],
    [30, false],
  ])(
    'a last page linking to a 404, /stats %s: the end, complete: %s (the run does not fail)',
    async (total, complete) => {
      const lines = Array.from({ length: 25 }, (_, i) => report(i));
      const server = await pagedUpstream(lines, total, {
        size: 10,
        tags: 'same',
        linksPastEnd: true,
        pastEndStatus: 404,
      });
      const { warehouse, run } = await firstSync(server.url);
      expect(await runRow(warehouse, run!.runId)).toMatchObject({ status: 'succeeded', complete, read: 25 });
    },
  );

  it('empty pages mid-export that still link on, after reports repeated across pages reached /stats: read on, nothing removed', async () => {
    // Page 2 repeats page 1's reports in another order (legal: the later one wins; in the same order it
    // would be page 1 again), then 3 empty pages link on to the last 5.
    const pages = [
      Array.from({ length: 10 }, (_, i) => report(i)),
      Array.from({ length: 10 }, (_, i) => report(9 - i)),
      [],
      [],
      [],
      Array.from({ length: 5 }, (_, i) => report(10 + i)),
    ];
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: 15 }));
      const page = Number(url.searchParams.get('page') ?? '1');
      const headers: Record<string, string> = { 'content-type': 'application/x-ndjson', etag: '"one"' };
      if (page < pages.length) headers.link = `</api/v1/public/reports.ndjson?page=${page + 1}>; rel="next"`;
      res.writeHead(200, headers);
      res.end(pages[page - 1]!.map((l) => `${l}\n`).join(''));
    });
    onTestFinished(() => server.close());
    const { warehouse, run } = await firstSync(server.url);
    expect(await runRow(warehouse, run!.runId)).toMatchObject({
      status: 'succeeded',
      complete: true,
      read: 25,
    });
    const [count] = await query(
      warehouse,
      `SELECT count(*)::INTEGER AS n FROM reports WHERE removed_at IS NULL`,
    );
    expect(count?.n).toBe(15);
  });

  it('a server answering a page past its end with its last page, linking on from every page: ends at the repeat, complete past page 2, each record read once (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 9 }), async (n, size) => {
        const lines = Array.from({ length: n }, (_, i) => report(i));
        const server = await pagedUpstream(lines, n, { size, tags: 'same', linksPastEnd: true, clamp: true });
        // A low page limit: a pager blind to the repeat stops at it, not after 100,000 pages.
        const config = testConfig(server.url, `${tmp.dir}/w-${Math.random()}.duckdb`, { csvMaxPages: 60 });
        const warehouse = await openTestWarehouse(config);
        onTestFinished(() => warehouse.close());
        const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
        const pages = Math.ceil(n / size);
        const row = await runRow(warehouse, run!.runId);
        // The repeated page is neither counted nor staged.
        expect(row).toMatchObject({ status: 'succeeded', complete: pages > 1, read: n, loaded: n });
        if (pages === 1) {
          expect(String(row?.tombstones_note)).toContain(
            'page 2 repeats the keys of page 1: the server ignores the page its `Link` asks for',
          );
        }
        expect(server.requests.filter((r) => r.url.includes('.ndjson')).length).toBe(pages + 1);
        warehouse.close();
      }),
      { numRuns: 12 },
    );
  });

  it('a clamping server: deletes follow from the export that ended at its repeated page', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => report(i));
    const paging = { size: 10, tags: 'same', linksPastEnd: true, clamp: true } as const;
    const first = await pagedUpstream(lines, 30, paging);
    const file = `${tmp.dir}/w.duckdb`;
    const config = (url: string) => testConfig(url, file, { csvMaxPages: 60 });
    const warehouse = await openTestWarehouse(config(first.url));
    onTestFinished(() => warehouse.close());
    await syncTargetOnce(warehouse, config(first.url), 'ndjson');
    const next = await pagedUpstream(lines.slice(0, 28), 28, paging);
    const [run] = await syncTargetOnce(warehouse, config(next.url), 'ndjson');
    expect(run?.error?.message).toBeUndefined();
    expect(await runRow(warehouse, run!.runId)).toMatchObject({ complete: true, read: 28 });
    expect(run?.counters.removed).toBe(2);
  });

  it('a 429 on a later page is retried alone: page 1 is asked once', async () => {
    const lines = Array.from({ length: 25 }, (_, i) => report(i));
    const server = await pagedUpstream(lines, 25, { size: 10, tags: 'same', rateLimitedPage: 3 });
    const { warehouse, run } = await firstSync(server.url);
    expect(await runRow(warehouse, run!.runId)).toMatchObject({
      status: 'succeeded',
      complete: true,
      read: 25,
    });
    const asked = server.requests.filter((r) => r.url.includes('.ndjson')).map((r) => r.url);
    expect(asked.filter((u) => !u.includes('page=')).length).toBe(1);
    expect(asked.filter((u) => u.includes('page=3')).length).toBe(2);
  });

  it('pages that link back to page 1 stop the run incomplete: what was read is merged once', async () => {
    const lines = Array.from({ length: 25 }, (_, i) => report(i));
    const server = await pagedUpstream(lines, 25, { size: 10, tags: 'same', loop: true });
    const { warehouse, run } = await firstSync(server.url);
    const row = await runRow(warehouse, run!.runId);
    expect(row).toMatchObject({ status: 'succeeded', complete: false });
    expect(String(row?.tombstones_note)).toMatch(/links back to a page already read/);
    // Page 1 is read again once (its link is not the entry URL), then the loop is caught: each report once.
    const [count] = await query(
      warehouse,
      `SELECT count(*)::INTEGER AS n FROM reports WHERE removed_at IS NULL`,
    );
    expect(count?.n).toBe(25);
  });
});
