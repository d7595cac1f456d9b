import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { csvRow } from '../helpers/paged-csv-server.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// A record quarantined without a readable id (a CSV row broken by a quote, a line that is not JSON) may be
// a report of the export that no one can name: while `/stats` counts more reports than the run named, a
// missing report may be that one, so none is tombstoned. Counted by no one, it is no report.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const HEADER = 'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n';
const ids = Array.from({ length: 12 }, (_, i) => `r-${String(i).padStart(2, '0')}`);
const line = (id: string) =>
  `${JSON.stringify({ id, status: 'SUBMITTED', destination: 'ROAD_CONTROL', createdAt: '2024-01-01T00:00:00Z' })}\n`;

/**
 * The export of `served`, the rows of `broken` unreadable, `junk` more unreadable rows that are no report
 * (a capture's `"id": null` line), `/stats` counting `total`.
 */
async function upstream(served: string[], broken: Set<string>, total: number, junk = 0) {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total }));
    if (url.pathname.endsWith('.ndjson')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      const rows = served.map((id) => (broken.has(id) ? 'not json at all\n' : line(id)));
      for (let i = 0; i < junk; i++)
        rows.splice((i * 5) % (rows.length + 1), 0, line('').replace('""', 'null'));
      return void res.end(rows.join(''));
    }
    const page = Number(url.searchParams.get('page'));
    // An unclosed quote in the category cell: the row cannot be read, its id not for sure.
    const row = (id: string) => (broken.has(id) ? csvRow(id).replace(',POTHOLE,', ',"POTHOLE,') : csvRow(id));
    res.writeHead(200, { 'content-type': 'text/csv', etag: '"v"' });
    const rows = served.map(row);
    for (let i = 0; i < junk; i++) rows.splice((i * 5) % (rows.length + 1), 0, csvRow(''));
    res.end(page === 1 ? HEADER + rows.join('') : HEADER);
  });
  onTestFinished(() => server.close());
  return server;
}

describe('tombstones and records quarantined without an id', () => {
  it('no report the upstream still publishes is tombstoned, whichever rows are unreadable (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('csv' as const, 'ndjson' as const),
        fc.subarray(ids, { minLength: 1, maxLength: 3 }),
        fc.subarray(ids, { maxLength: 3 }),
        fc.integer({ min: 0, max: 3 }),
        async (source, brokenIds, gone, tolerance) => {
          const file = `${tmp.dir}/w-${Math.random().toString(36).slice(2)}.duckdb`;
          const first = await upstream(ids, new Set(), ids.length);
          const load = testConfig(first.url, file, { csvPageSize: 100, retries: 0 });
          const warehouse = await openTestWarehouse(load);
          onTestFinished(() => warehouse.close());
          expect((await syncTargetOnce(warehouse, load, 'ndjson'))[0]?.status).toBe('succeeded');

          // Some reports unpublished (not served, not counted); some served but unreadable.
          const served = ids.filter((id) => !gone.includes(id));
          const broken = new Set(brokenIds.filter((id) => served.includes(id)));
          const next = await upstream(served, broken, served.length);
          const config = testConfig(next.url, file, {
            csvPageSize: 100,
            retries: 0,
            statsDiffWarn: tolerance,
            maxRejectRatio: 1,
          });
          const [run] = await syncTargetOnce(warehouse, config, source);
          expect(run?.status, run?.error?.message).toBe('succeeded');
          const removed = await query(
            warehouse,
            `SELECT id FROM reports WHERE removed_at IS NOT NULL ORDER BY id`,
          );
          for (const { id } of removed) expect(served).not.toContain(id);
          if (broken.size > 0 && gone.length > 0) {
            const [logged] = await query(
              warehouse,
              `SELECT tombstones_note FROM sync_runs WHERE run_id = $run`,
              {
                run: run!.runId,
              },
            );
            expect(String(logged?.tombstones_note)).toMatch(/^no tombstones: /);
          }
          warehouse.close();
        },
      ),
      { numRuns: 12 },
    );
  });

  it('rows that are no report of the upstream (not counted by /stats) do not stop deletes (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('csv' as const, 'ndjson' as const),
        fc.subarray(ids, { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 3 }),
        async (source, gone, junk) => {
          const file = `${tmp.dir}/w-${Math.random().toString(36).slice(2)}.duckdb`;
          const first = await upstream(ids, new Set(), ids.length, junk);
          const load = testConfig(first.url, file, { csvPageSize: 100, retries: 0, maxRejectRatio: 1 });
          const warehouse = await openTestWarehouse(load);
          onTestFinished(() => warehouse.close());
          expect((await syncTargetOnce(warehouse, load, source))[0]?.status).toBe('succeeded');

          const served = ids.filter((id) => !gone.includes(id));
          const next = await upstream(served, new Set(), served.length, junk);
          const config = testConfig(next.url, file, {
            csvPageSize: 100,
            retries: 0,
            maxRejectRatio: 1,
            tombstoneMinShare: 0.5,
          });
          const [run] = await syncTargetOnce(warehouse, config, source);
          expect(run?.status, run?.error?.message).toBe('succeeded');
          expect(run?.counters.recordsRejected).toBe(junk);
          const removed = await query(
            warehouse,
            `SELECT id FROM reports WHERE removed_at IS NOT NULL ORDER BY id`,
          );
          expect(removed.map((r) => r.id)).toEqual([...gone].sort());
          warehouse.close();
        },
      ),
      { numRuns: 8 },
    );
  });

  it.each(['ndjson', 'recent'] as const)(
    'a %s record giving its id twice names no report: neither it may be is tombstoned',
    async (source) => {
      const file = `${tmp.dir}/w.duckdb`;
      const first = await upstream(ids, new Set(), ids.length);
      const load = testConfig(first.url, file, { retries: 0 });
      const warehouse = await openTestWarehouse(load);
      onTestFinished(() => warehouse.close());
      expect((await syncTargetOnce(warehouse, load, 'ndjson'))[0]?.status).toBe('succeeded');

      // r-10 and r-11 still published (counted), served as one line naming both.
      const twice = line('r-10').replace('"id":"r-10"', '"id":"r-10","id":"r-11"');
      const lines = [...ids.slice(0, 10).map(line), twice];
      const server = await startRawServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: ids.length }));
        if (url.pathname.endsWith('.ndjson')) return void res.end(lines.join(''));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(url.searchParams.get('page') === '1' ? `[${lines.join(',')}]` : '[]');
      });
      onTestFinished(() => server.close());
      const config = testConfig(server.url, file, {
        retries: 0,
        statsDiffWarn: 1,
        maxRejectRatio: 1,
        tombstoneMinShare: 0.5,
      });
      const [run] = await syncTargetOnce(warehouse, config, source);
      expect(run?.status, run?.error?.message).toBe('succeeded');
      expect(await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NOT NULL`)).toEqual([]);
      expect(await query(warehouse, `SELECT record_id FROM rejected_records`)).toEqual([{ record_id: null }]);
      expect(await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NOT NULL`)).toEqual([]);
    },
  );
});
