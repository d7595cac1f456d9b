import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { csvRow, startPagedCsvServer, type PagedCsvOptions } from '../helpers/paged-csv-server.js';
import { startRawServer } from '../helpers/raw-server.js';
import { PAGES_AHEAD } from '../../src/sync/sources/csv-pages.js';
import {
  capturingLogger,
  openTestWarehouse,
  query,
  syncTargetOnce,
  tempDir,
  testConfig,
} from '../helpers/sync.js';

// The paged CSV export against hostile-but-legal servers (docs/guarantees.md, "Deletes and completeness"):
// real pipeline, real DuckDB file, a raw server that pages a list of ids.

const ids = (n: number) => Array.from({ length: n }, (_, i) => `r-${String(i).padStart(4, '0')}`);

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('reports-sync-paging-');
});
afterEach(() => tmp.cleanup());

let warehouses = 0;

async function setup(start: string[], options: PagedCsvOptions, pageSize: number) {
  const server = await startPagedCsvServer(start, options);
  // A warehouse of its own for each call (property runs call it many times in one test).
  const file = join(tmp.dir, `w-${++warehouses}.duckdb`);
  const config = testConfig(server.url, file, { csvPageSize: pageSize });
  const warehouse = await openTestWarehouse(config);
  onTestFinished(async () => {
    warehouse.close();
    await server.close();
  });
  const lastRun = async () =>
    (
      await query(
        warehouse,
        `SELECT status, complete, removed, tombstones_note, records_read, records_rejected FROM sync_runs ORDER BY started_at DESC LIMIT 1`,
      )
    )[0];
  const current = async () =>
    (await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NULL ORDER BY id`)).map((r) => r.id);
  return { server, config, warehouse, lastRun, current };
}

describe('paged CSV export: no wrong delete', () => {
  it('without ETag or Last-Modified, a row unpublished mid-export tombstones nothing', async () => {
    const start = ids(30);
    const { config, warehouse, lastRun, current } = await setup(start, { validators: false }, 10);
    await syncTargetOnce(warehouse, config, 'csv');
    expect(await current()).toEqual(start);
    // Second run: after page 1 is read, r-0003 (on page 1) is unpublished: r-0010 slides onto page 1 and
    // is never seen, while the count still matches /stats.
    let unpublished = false;
    const gone = 'r-0003';
    const withShift = await startPagedCsvServer(start, {
      validators: false,
      beforePage: (page) => {
        if (page === 2 && !unpublished) {
          unpublished = true;
          withShift.ids = withShift.ids.filter((id) => id !== gone);
        }
      },
    });
    onTestFinished(() => withShift.close());
    const [run] = await syncTargetOnce(warehouse, { ...config, baseUrl: withShift.url }, 'csv');
    expect(run?.status).toBe('succeeded');
    expect(unpublished).toBe(true);
    const row = await lastRun();
    expect(row).toMatchObject({ status: 'succeeded', complete: true, removed: 0 });
    expect(String(row?.tombstones_note)).toContain('cannot be proven consistent');
    expect(String(row?.tombstones_note)).toContain('neither ETag nor Last-Modified');
    // r-0010 still exists upstream and is still current; nothing was removed on an unprovable read.
    expect(await current()).toEqual(start);
  });

  it('with an ETag, the same change restarts the read and tombstones exactly the unpublished row', async () => {
    const start = ids(30);
    let unpublished = false;
    const gone = 'r-0003';
    const { server, config, warehouse, lastRun, current } = await setup(
      start,
      {
        beforePage: (page) => {
          if (page === 2 && !unpublished && first.done) {
            unpublished = true;
            server.ids = server.ids.filter((id) => id !== gone);
          }
        },
      },
      10,
    );
    const first = { done: false };
    await syncTargetOnce(warehouse, config, 'csv');
    first.done = true;
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    expect(run?.attempts).toBe(2); // EXPORT_CHANGED: read again from page 1
    expect(await lastRun()).toMatchObject({ complete: true, removed: 1 });
    expect(await current()).toEqual(start.filter((id) => id !== gone));
  });

  it('a server capping pageSize (50 served, 500 asked) is read to the end', async () => {
    const start = ids(120);
    const { config, warehouse, lastRun, current } = await setup(start, { cap: 50 }, 500);
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    expect(run?.counters).toMatchObject({ recordsRead: 120, pages: 3 });
    expect(await lastRun()).toMatchObject({ complete: true });
    expect(await current()).toEqual(start);
  });

  it.each([
    ['without a Link', false],
    ['with a Link', true],
  ])('reads past a header-only page mid-export %s', async (_, links) => {
    const start = ids(40);
    const { config, warehouse, lastRun, current } = await setup(
      start,
      { links, emptyPages: { at: [2], shift: true } },
      10,
    );
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    expect(run?.counters.recordsRead).toBe(40);
    expect(await lastRun()).toMatchObject({ complete: true });
    expect(await current()).toEqual(start);
  });

  it('a header-only page that loses rows marks the run incomplete: no tombstones, a warning with numbers', async () => {
    const start = ids(40);
    const { config, warehouse, lastRun, current } = await setup(start, {}, 10);
    await syncTargetOnce(warehouse, config, 'csv');
    const lossy = await startPagedCsvServer(start, { emptyPages: { at: [2, 3, 4], shift: false } });
    onTestFinished(() => lossy.close());
    const { logger, lines } = await capturingLogger();
    const [run] = await syncTargetOnce(warehouse, { ...config, baseUrl: lossy.url }, 'csv', logger);
    expect(run?.status).toBe('succeeded');
    const row = await lastRun();
    expect(row).toMatchObject({ complete: false, removed: 0 });
    expect(String(row?.tombstones_note)).toContain('incomplete');
    const warning = lines.find((l) => String(l.msg).includes('stopped incomplete'));
    expect(String(warning?.reason)).toMatch(/\/stats says 30 rows are still missing/);
    expect(await current()).toEqual(start);
  });
});

describe('paged CSV export: servers that end, loop or frame pages their own way', () => {
  it.each([404, 400, 416])(
    'HTTP %i past the last page ends the export; /stats confirms it, so deletes follow',
    async (status) => {
      const start = ids(200);
      const { server, config, warehouse, lastRun, current } = await setup(
        start,
        { pastEndStatus: status },
        100,
      );
      await syncTargetOnce(warehouse, config, 'csv');
      expect(await lastRun()).toMatchObject({ status: 'succeeded', complete: true });
      expect(await current()).toEqual(start);
      server.ids = start.filter((id) => id !== 'r-0007');
      await syncTargetOnce(warehouse, config, 'csv');
      expect(await lastRun()).toMatchObject({ status: 'succeeded', complete: true, removed: 1 });
    },
  );

  it('HTTP 404 past the last page with no /stats: every row loaded, the run incomplete (no deletes)', async () => {
    const start = ids(50);
    const { config, warehouse, lastRun, current } = await setup(
      start,
      { pastEndStatus: 404, cap: 50, noStats: true },
      100,
    );
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    expect(await current()).toEqual(start);
    expect(await lastRun()).toMatchObject({ complete: false });
  });

  it.each(['per-page', 'stamped'] as const)(
    'validators that name no export version (%s): every row read, complete, deletes not inferred',
    async (validators) => {
      const start = ids(25);
      const { server, config, warehouse, lastRun, current } = await setup(
        start,
        { validators, conditional: true },
        10,
      );
      await syncTargetOnce(warehouse, config, 'csv');
      expect(await lastRun()).toMatchObject({ status: 'succeeded', complete: true, records_read: 25 });
      expect(await current()).toEqual(start);
      server.ids = start.filter((id) => id !== 'r-0003');
      await syncTargetOnce(warehouse, config, 'csv');
      const run = await lastRun();
      expect(run).toMatchObject({ status: 'succeeded', complete: true, removed: 0 });
      expect(String(run?.tombstones_note)).toMatch(
        validators === 'per-page' ? /validator of its own/ : /neither ETag nor Last-Modified/,
      );
      // Rows added on a later page: page 1 is the same, yet the next run reads them (no 304 on its word).
      server.ids = [...server.ids, 'r-0100', 'r-0101'];
      await syncTargetOnce(warehouse, config, 'csv');
      expect(await current()).toContain('r-0101');
    },
  );

  it('an error answer mid-export, rows after it: the run is incomplete and removes nothing', async () => {
    const start = ids(40);
    const failOnce = new Map<number, number>();
    const { server, config, warehouse, lastRun, current } = await setup(start, { failOnce }, 2);
    await syncTargetOnce(warehouse, config, 'csv');
    // Two reports more upstream while /stats lags at 40, and page 2 answers 404 once.
    server.ids = [...start, 'r-0100', 'r-0101'].sort();
    failOnce.set(2, 404);
    const lagging = await startPagedCsvServer(server.ids, { failOnce, statsTotal: 40 });
    onTestFinished(() => lagging.close());
    await syncTargetOnce(warehouse, { ...config, baseUrl: lagging.url }, 'csv');
    expect(await lastRun()).toMatchObject({ status: 'succeeded', complete: false, removed: 0 });
    // The cause is named, not the short pages that follow from it.
    expect(String((await lastRun())?.tombstones_note)).toMatch(
      /page 2 answered an error \(or no content\), yet page \d+ has rows/,
    );
    expect(await current()).toEqual(expect.arrayContaining(start));
  });

  it('a close-delimited page 1 cut at a line break (with a Link) is read again, no row lost', async () => {
    const start = ids(6);
    const options = { links: true, closeDelimited: true, noStats: true, cutFirstPageOnce: true };
    const { config, warehouse, current } = await setup(start, options, 2);
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    expect(await current()).toEqual(start);
  });

  it('a close-delimited page without Link cut at a row end is read again: no row lost, wherever the cut, gzip-coded or not (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 9 }),
        fc.boolean(),
        fc.boolean(),
        async (page, keep, stats, gzipRows) => {
          const start = ids(35);
          const cutOnce = { page, keep };
          // gzip members a row: the cut falls between two members and the decoder sees a clean end.
          const { server, config, warehouse, lastRun, current } = await setup(
            start,
            { closeDelimited: true, noStats: !stats, cutOnce, gzipRows },
            10,
          );
          const [run] = await syncTargetOnce(warehouse, config, 'csv');
          expect(run?.status, run?.error?.message).toBe('succeeded');
          expect(await current()).toEqual(start);
          expect(await lastRun()).toMatchObject({ complete: true, records_read: 35 });
          const asked = server.requests.filter(
            (r) => r.url.includes(`&page=${page}`) || r.url.endsWith(`page=${page}`),
          );
          // A full page is confirmed by its second read; the short last page (5 rows) by two reads that agree.
          expect(asked.length).toBe(page === 4 && keep < 5 ? 3 : 2);
          warehouse.close();
          await server.close();
        },
      ),
      { numRuns: 8 },
    );
  });

  it('close-delimited pages without a final line break (RFC 4180 §2.2) are kept once a second read gives the same bytes (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 1, max: 10 }),
        fc.boolean(),
        async (count, pageSize, stats) => {
          const start = ids(count);
          const { server, config, warehouse, lastRun, current } = await setup(
            start,
            { closeDelimited: true, noFinalLineBreak: true, noStats: !stats },
            pageSize,
          );
          const [run] = await syncTargetOnce(warehouse, config, 'csv');
          expect(run?.status, run?.error?.message).toBe('succeeded');
          expect(await current()).toEqual(start);
          expect(await lastRun()).toMatchObject({ complete: true, records_read: count, records_rejected: 0 });
          // Each page read twice: once, then once to confirm its end.
          const perPage = new Map<string, number>();
          for (const r of server.requests.filter((q) => q.url.includes('.csv'))) {
            perPage.set(r.url, (perPage.get(r.url) ?? 0) + 1);
          }
          expect([...perPage.values()].every((n) => n === 2)).toBe(true);
          warehouse.close();
          await server.close();
        },
      ),
      { numRuns: 8 },
    );
  });

  it.each([
    ['without', true],
    ['with', false],
  ])(
    'a close-delimited page cut once inside its last cell (the row has every cell) is read again: the whole row stored (pages %s a final line break)',
    async (_, noFinalLineBreak) => {
      const start = ids(12);
      const { config, warehouse, lastRun, current } = await setup(
        start,
        { closeDelimited: true, noFinalLineBreak, cutLastCell: { page: 3, times: 1 } },
        5,
      );
      const [run] = await syncTargetOnce(warehouse, config, 'csv');
      expect(run?.status, run?.error?.message).toBe('succeeded');
      expect(await current()).toEqual(start);
      expect(await lastRun()).toMatchObject({ complete: true, records_read: 12, records_rejected: 0 });
      // A read cut in the timestamp would store another time (or quarantine the row).
      const [last] = await query(
        warehouse,
        `SELECT epoch(updated_at)::BIGINT AS at FROM reports WHERE id = 'r-0011'`,
      );
      expect(Number(last?.at)).toBe(Date.parse('2024-01-02T00:00:00Z') / 1000);
    },
  );

  it('a close-delimited page cut inside its last cell on every read, each time elsewhere: BODY_TRUNCATED, nothing merged', async () => {
    const start = ids(12);
    const options = { closeDelimited: true, cutLastCell: { page: 2, times: Infinity } };
    const { config, warehouse, current } = await setup(start, options, 5);
    const [run] = await syncTargetOnce(warehouse, { ...config, retries: 2 }, 'csv');
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('BODY_TRUNCATED');
    expect(run?.error?.message).toContain('ending without a line break');
    expect(await current()).toEqual([]);
  });

  it('pages whose rows end with CRLF, LF or a lone CR load every row, complete (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('\r\n' as const, '\n' as const, '\r' as const),
        fc.integer({ min: 1, max: 30 }),
        fc.boolean(),
        async (lineEnd, count, stats) => {
          const start = ids(count);
          const { server, config, warehouse, lastRun, current } = await setup(
            start,
            { lineEnd, noStats: !stats },
            10,
          );
          const [run] = await syncTargetOnce(warehouse, config, 'csv');
          expect(run?.status, run?.error?.message).toBe('succeeded');
          expect(await current()).toEqual(start);
          expect(await lastRun()).toMatchObject({ complete: true, records_read: count, records_rejected: 0 });
          warehouse.close();
          await server.close();
        },
      ),
      { numRuns: 8 },
    );
  });

  it('a short first page then a fuller one: the size adopted as a cap was wrong, the run removes nothing', async () => {
    const start = ids(40);
    const cutOnce = { page: 1, keep: 0 };
    const { server, config, warehouse, lastRun, current } = await setup(start, { noStats: true }, 10);
    await syncTargetOnce(warehouse, config, 'csv');
    // A framed answer of 4 rows to page 1, once: read as a server serving 4 rows a page, until page 2 has 10.
    Object.assign(cutOnce, { keep: 4 });
    const flaky = await startPagedCsvServer(server.ids, { noStats: true, cutOnce });
    onTestFinished(() => flaky.close());
    await syncTargetOnce(warehouse, { ...config, baseUrl: flaky.url }, 'csv');
    expect(await lastRun()).toMatchObject({ status: 'succeeded', complete: false, removed: 0 });
    expect(String((await lastRun())?.tombstones_note)).toMatch(
      /more than the 4 adopted as the server's page size/,
    );
    expect(await current()).toEqual(start);
  });

  it.each([404, 200])(
    'a server that links on from its last page (then %s): complete once /stats confirms it, deletes inferred',
    async (pastEnd) => {
      const ids = Array.from({ length: 30 }, (_, i) => `L-${String(i).padStart(3, '0')}`);
      const server = await startPagedCsvServer(ids, {
        links: true,
        linksPastEnd: true,
        ...(pastEnd === 404 ? { pastEndStatus: 404 } : {}),
      });
      onTestFinished(() => server.close());
      const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { csvPageSize: 10 });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      const [first] = await syncTargetOnce(warehouse, config, 'csv');
      expect(first?.status, first?.error?.message).toBe('succeeded');
      expect(first?.incompleteReason).toBeUndefined();
      expect(first?.counters.recordsLoaded).toBe(30);
      server.ids = ids.filter((id) => id !== 'L-004' && id !== 'L-027');
      const [second] = await syncTargetOnce(warehouse, config, 'csv');
      expect(second?.status, second?.error?.message).toBe('succeeded');
      expect(second?.incompleteReason).toBeUndefined();
      const removed = await query(
        warehouse,
        `SELECT id FROM reports WHERE removed_at IS NOT NULL ORDER BY id`,
      );
      expect(removed.map((r) => r.id)).toEqual(['L-004', 'L-027']);
    },
  );

  it('an export that redirects every page to one static file is read whole, complete when /stats confirms it', async () => {
    let ids = Array.from({ length: 30 }, (_, i) => `S-${String(i).padStart(3, '0')}`);
    const header = 'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n';
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: ids.length }));
      if (url.pathname === '/files/reports.csv') {
        res.writeHead(200, { 'content-type': 'text/csv', etag: `"file-${ids.length}"` });
        return void res.end(header + ids.map(csvRow).join(''));
      }
      res.writeHead(302, { location: '/files/reports.csv' }).end();
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { csvPageSize: 10 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [first] = await syncTargetOnce(warehouse, config, 'csv');
    expect(first?.status, first?.error?.message).toBe('succeeded');
    expect(first?.incompleteReason).toBeUndefined();
    expect(first?.counters).toMatchObject({ recordsRead: 30, recordsLoaded: 30 });
    ids = ids.filter((id) => id !== 'S-007');
    const [second] = await syncTargetOnce(warehouse, config, 'csv');
    expect(second?.incompleteReason).toBeUndefined();
    expect(second?.counters).toMatchObject({ recordsRead: 29, removed: 1 });
  });

  it('a server numbering its pages from 0: every row with REPORTS_CSV_FIRST_PAGE=0, and without it a reason naming the setting', async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `Z-${String(i).padStart(3, '0')}`);
    const header = 'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n';
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: ids.length }));
      const page = Number(url.searchParams.get('page'));
      const size = Number(url.searchParams.get('pageSize'));
      res.writeHead(200, { 'content-type': 'text/csv', etag: '"v1"' });
      res.end(
        header +
          ids
            .slice(page * size, (page + 1) * size)
            .map(csvRow)
            .join(''),
      );
    });
    onTestFinished(() => server.close());
    const zero = testConfig(server.url, join(tmp.dir, 'zero.duckdb'), { csvPageSize: 10, csvFirstPage: 0 });
    const warehouse = await openTestWarehouse(zero);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, zero, 'csv');
    expect(run?.incompleteReason).toBeUndefined();
    expect(run?.counters).toMatchObject({ recordsRead: 25, recordsLoaded: 25 });
    expect(server.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('page'))).toContain('0');

    const one = testConfig(server.url, join(tmp.dir, 'one.duckdb'), { csvPageSize: 10 });
    const other = await openTestWarehouse(one);
    onTestFinished(() => other.close());
    const [missed] = await syncTargetOnce(other, one, 'csv');
    expect(missed?.counters.recordsRead).toBe(15);
    expect(missed?.incompleteReason).toMatch(/REPORTS_CSV_FIRST_PAGE=0/);
  });

  it('a Link that leads back to an earlier page stops the read incomplete instead of paging forever', async () => {
    const start = ids(25);
    const { server, config, warehouse, lastRun, current } = await setup(
      start,
      { links: true, linkBackTo: 1 },
      10,
    );
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    expect(await current()).toEqual(start);
    expect(await lastRun()).toMatchObject({ complete: false, records_read: 25 });
    expect(server.requests.filter((r) => !r.url.includes('/stats')).length).toBeLessThan(8);
  });

  it.each([
    ['without a Link', false],
    ['linking on from every page', true],
  ])(
    'a server answering a page past its end with its last page (%s): the export ends there, complete, and deletes follow',
    async (_, links) => {
      const start = ids(30);
      const { server, config, warehouse, lastRun, current } = await setup(
        start,
        { clampPastEnd: true, links, linksPastEnd: links },
        2,
      );
      const pagesAsked = () => server.requests.filter((r) => r.url.includes('.csv')).length;
      const [run] = await syncTargetOnce(warehouse, config, 'csv');
      // Page 16 repeats page 15: read, neither counted nor staged (pages linked on may be fetched ahead).
      expect(run?.counters).toMatchObject({ recordsRead: 30, pages: 15 });
      expect(await lastRun()).toMatchObject({ status: 'succeeded', complete: true, records_read: 30 });
      expect(pagesAsked()).toBeGreaterThanOrEqual(16);
      expect(pagesAsked()).toBeLessThanOrEqual(16 + PAGES_AHEAD);
      const asked = pagesAsked();
      server.ids = start.slice(0, 28);
      await syncTargetOnce(warehouse, config, 'csv');
      expect(await lastRun()).toMatchObject({ complete: true, records_read: 28, removed: 2 });
      expect(await current()).toEqual(start.slice(0, 28));
      expect(pagesAsked() - asked).toBeLessThanOrEqual(15 + PAGES_AHEAD);
    },
  );

  it('a clamping server whose one page is full: page 2 repeats page 1, the page parameter ignored as far as can be told', async () => {
    const start = ids(5);
    const { config, warehouse, lastRun, current } = await setup(start, { clampPastEnd: true }, 5);
    await syncTargetOnce(warehouse, config, 'csv');
    const run = await lastRun();
    expect(run).toMatchObject({ status: 'succeeded', complete: false, records_read: 5 });
    expect(String(run?.tombstones_note)).toContain(
      'page 2 repeats the keys of page 1: the server ignores the `page` parameter (REPORTS_CSV_PAGE_PARAM?)',
    );
    expect(await current()).toEqual(start);
  });

  it('close-delimited pages of a server that caps pageSize and links on are read to the end', async () => {
    const start = ids(75);
    const { config, warehouse, lastRun, current } = await setup(
      start,
      { cap: 30, links: true, closeDelimited: true },
      100,
    );
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect([run?.status, run?.error?.message]).toEqual(['succeeded', undefined]);
    expect(await current()).toEqual(start);
    expect(await lastRun()).toMatchObject({ complete: true, records_read: 75 });
  });
});

describe('paged CSV export against the simulator fault switches', () => {
  it('csv:noValidators, csv:capPageSize and csv:emptyPage: every row read, complete, no tombstones', async () => {
    const { startTestSimulator } = await import('../helpers/simulator.js');
    const sim = await startTestSimulator({
      faults: ['csv:noValidators', 'stats:noValidators', 'csv:capPageSize=4', 'csv:emptyPage=2'],
    });
    const config = testConfig(sim.url, join(tmp.dir, 'w.duckdb'), { csvPageSize: 10, maxRejectRatio: 1 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    const [row] = await query(
      warehouse,
      `SELECT complete, removed, tombstones_note, export_etag, stats_total_upstream, records_read FROM sync_runs`,
    );
    expect(row).toMatchObject({ complete: true, removed: 0, export_etag: null });
    expect(Number(row?.records_read)).toBeGreaterThanOrEqual(Number(row?.stats_total_upstream));
    expect(String(row?.tombstones_note)).toContain('neither ETag nor Last-Modified');
    const pages = sim.requests().filter((r) => r.path.includes('exports/reports.csv'));
    expect(pages.length).toBeGreaterThan(3); // capped at 4 rows, one header-only page read past
  });
});
