import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PageIndex } from '../../src/reader/page-index.js';
import { totalOf } from '../../src/reader/page-windows.js';
import { countsInTransaction, listPageRows, streamPage } from '../../src/reader/report-pages.js';
import type { ReportFilter } from '../../src/reader/report-rows.js';
import type { Report } from '../../src/schema/wire-format.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { sortPendingRows } from '../../src/warehouse/recluster.js';
import { rebuildServingIndex } from '../../src/warehouse/serving-index.js';
import { refreshRecentRows } from '../../src/warehouse/serving-recent.js';
import { expectIndexExact, offsetRows, show } from '../helpers/serving.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const STATUSES = ['SUBMITTED', 'IN_PROGRESS', 'RESOLVED'];
const DESTINATIONS = ['ROAD_CONTROL', 'PARKS', 'WASTE'];
// Few instants, so many reports tie on createdAt; before and after 1970 (negative epochs), close together
// and years apart, so buckets of any width hold several, one or none of them.
const CREATED = [
  '1969-12-31T23:59:59.999Z',
  '1970-01-01T00:00:00.000Z',
  '2024-03-01T10:00:00.000Z',
  '2024-03-01T10:00:00.001Z',
  '2024-03-01T11:00:00.000Z',
  '2024-03-02T10:00:00.000Z',
  '2024-09-30T23:59:59.999Z',
  '2031-01-01T00:00:00.000Z',
];
const EXTRA_KEYS = ['channel', 'district', 'ward', 'votes'];

/** One upstream state: per report whether it is published, and its fields in that state. */
const report = fc.record({
  present: fc.boolean(),
  status: fc.nat(STATUSES.length - 1),
  destination: fc.nat(DESTINATIONS.length - 1),
  created: fc.nat(CREATED.length - 1),
  located: fc.boolean(),
  // Keys in any order, each a number, a text or null: a CSV reading keeps text and drops null.
  extra: fc.shuffledSubarray(EXTRA_KEYS).chain((keys) =>
    fc.tuple(
      fc.constant(keys),
      fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 3 }), fc.constant(null)), {
        minLength: keys.length,
        maxLength: keys.length,
      }),
    ),
  ),
});
type StepReport = typeof report extends fc.Arbitrary<infer T> ? T : never;
const step = (n: number) =>
  fc.record({
    reports: fc.array(report, { minLength: n, maxLength: n }),
    source: fc.constantFrom('ndjson' as const, 'csv' as const),
  });
const scenario = fc.integer({ min: 1, max: 24 }).chain((n) =>
  fc.record({
    steps: fc.array(step(n), { minLength: 1, maxLength: 4 }),
    // Reports per bucket the index is built for after the first run: small ones give many buckets.
    bucketReports: fc.constantFrom(1, 2, 3, 1024),
    // Merges in slices of 1 or 2 staged reports, or in one; removals tombstoned, or (a full export may not
    // remove any report) the current reports it lacked marked unseen and kept.
    sliceRows: fc.constantFrom(1, 2, 1_000_000),
    tombstones: fc.boolean(),
    // Recent rows allowed after each run (warehouse/serving-recent.ts): 0 moves the split every run (no
    // recent rows), 1-3 now and then, undefined keeps the run's own default (the split stays where the first
    // run put it: every later change is served from the recent rows).
    recentCap: fc.constantFrom(0, 1, 3, undefined),
    // Then the last run's changes appended (1), or the recent rows rewritten sorted (0).
    appendShare: fc.constantFrom(0, 1),
    // When the split moves, the rows it leaves behind sorted again in slices of 1-3 rows or in one, and the
    // sort stopped after its first or second slice (as a crash would) or let finish.
    reclusterSlice: fc.constantFrom(1, 2, 3, 1_000_000),
    sortStop: fc.constantFrom(0, 1, undefined),
    checks: fc.array(
      fc.record({
        status: fc.option(fc.constantFrom(...STATUSES, 'UNKNOWN'), { nil: undefined }),
        destination: fc.option(fc.constantFrom(...DESTINATIONS), { nil: undefined }),
        pageSize: fc.integer({ min: 1, max: 7 }),
      }),
      { minLength: 2, maxLength: 5 },
    ),
  }),
);

/** The NDJSON line of report `i` in state `r` of step `k` (its `updatedAt` moves with the step). */
function line(i: number, r: StepReport, k: number): string {
  const extra = Object.fromEntries(r.extra[0].map((key, j) => [key, r.extra[1][j]]));
  return JSON.stringify({
    id: `r${i}`,
    status: STATUSES[r.status],
    destination: DESTINATIONS[r.destination],
    location: r.located ? { lat: 50 + i / 100, lng: 7 } : null,
    createdAt: CREATED[r.created],
    updatedAt: `2032-01-0${k + 1}T00:00:00.000Z`,
    ...extra,
  });
}

async function collect(reports: AsyncIterable<Report[]>): Promise<string[]> {
  const all: string[] = [];
  for await (const chunk of reports) for (const r of chunk) all.push(JSON.stringify(r));
  return all;
}

describe('paging with the serving index', () => {
  it('gives exactly what the OFFSET queries give, for any filter, page and page size, run after run', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        scenario,
        async ({
          steps,
          bucketReports,
          sliceRows,
          tombstones,
          recentCap,
          appendShare,
          reclusterSlice,
          sortStop,
          checks,
        }) => {
          const dir = join(tmp.dir, `s${round++}`);
          let warehouse: Awaited<ReturnType<typeof openTestWarehouse>> | undefined;
          // One index for the whole scenario, as a reader keeps it across runs: stale counts must be noticed.
          // Pages read the split however few the recent rows (a reader reads it from one row group on).
          const index = new PageIndex(256, 0);
          try {
            for (const [k, s] of steps.entries()) {
              const file = `${dir}-${k}.ndjson`;
              const lines = s.reports.flatMap((r, i) => (r.present ? [line(i, r, k)] : []));
              if (lines.length === 0) lines.push(line(0, s.reports[0]!, k));
              writeFileSync(file, `${lines.join('\n')}\n`);
              const sim = await startTestSimulator({ dataset: await loadDataset(file) });
              const config = testConfig(sim.url, `${dir}.duckdb`, {
                csvPageSize: 3,
                tombstoneMinShare: tombstones ? 0 : 1,
                mergeSliceRows: sliceRows,
              });
              warehouse ??= await openTestWarehouse(config);
              try {
                const [run] = await syncTargetOnce(warehouse, config, s.source);
                expect(run?.status, run?.error?.message).toBe('succeeded');
              } finally {
                await sim.close();
              }
              const c = await warehouse.connect();
              try {
                if (k === 0) {
                  await c.run('BEGIN TRANSACTION');
                  await rebuildServingIndex(c, bucketReports);
                  await c.run('COMMIT');
                }
                // As a run does: a new version, then the recent rows for it.
                await c.run('BEGIN TRANSACTION');
                await c.run('UPDATE reader_serving SET version = version + 1');
                const last = await c.runAndReadAll('SELECT max(last_changed_at)::VARCHAR FROM report_rows');
                const changedAt = (last.getRows()[0]?.[0] as string | null) ?? undefined;
                await refreshRecentRows(c, { maxRows: recentCap, changedAt, appendShare });
                await c.run('COMMIT');
                // As the run does once committed: the rows a moved split left behind, sorted again slice by
                // slice (a stop leaves the rest to the next step's sort, or folds it into its move).
                const stop = async (slice: number) => {
                  if (slice === sortStop) throw new Error('stopped');
                };
                await sortPendingRows(c, { minRows: 0, sliceRows: reclusterSlice, afterSlice: stop }).catch(
                  (err: Error) => expect(err.message).toBe('stopped'),
                );
                await expectIndexExact(c);
                for (const check of checks) {
                  const filter = { status: check.status, destination: check.destination };
                  const q = { index, filter, timeoutMs: 10_000, what: 'test' };
                  const total = (await offsetRows(c, filter, 'newest', 0, undefined)).length;
                  for (let page = 1; (page - 1) * check.pageSize <= total; page++) {
                    const offset = (page - 1) * check.pageSize;
                    const got = (await listPageRows(c, q, page, check.pageSize)).rows.map(show);
                    expect(got, `list ${JSON.stringify(filter)} page ${page}`).toEqual(
                      await offsetRows(c, filter, 'newest', offset, check.pageSize),
                    );
                  }
                  await expectTransactionReads(c, index, filter, check.pageSize);
                }
              } finally {
                c.closeSync();
              }
            }
          } finally {
            warehouse?.close();
          }
        },
      ),
      { numRuns: 15, endOnFailure: true }, // no shrinking: each try is several pipeline runs
    );
  }, 600_000);
});

/** CSV pages (export order), the NDJSON export and the GeoJSON export read in one transaction. */
async function expectTransactionReads(
  c: DuckDBConnection,
  index: PageIndex,
  filter: ReportFilter,
  pageSize: number,
): Promise<void> {
  const all = { index, filter: {}, timeoutMs: 10_000, what: 'test' };
  const filtered = { ...all, filter };
  await c.run('BEGIN TRANSACTION');
  try {
    const counts = await countsInTransaction(c, all);
    expect(counts).not.toBeNull();
    const total = totalOf(counts!);
    expect(total).toBe((await offsetRows(c, {}, 'oldest', 0, undefined)).length);
    for (let offset = 0; offset <= total; offset += pageSize) {
      const got = await collect(streamPage(c, all, counts, 'oldest', { offset, limit: pageSize }));
      const want = await offsetRows(c, {}, 'oldest', offset, pageSize);
      expect(got, `csv page at ${offset}`).toEqual(want.map((r) => JSON.stringify(JSON.parse(r))));
    }
    expect(await collect(streamPage(c, all, counts, 'oldest', { offset: 0 }))).toEqual(
      await offsetRows(c, {}, 'oldest', 0, undefined),
    );
    const located = 'lat IS NOT NULL AND lng IS NOT NULL';
    const filteredCounts = await countsInTransaction(c, filtered);
    expect(
      await collect(streamPage(c, filtered, filteredCounts, 'newest', { offset: 0, extraWhere: located })),
    ).toEqual(await offsetRows(c, filter, 'newest', 0, undefined, located));
  } finally {
    await c.run('COMMIT');
  }
}
