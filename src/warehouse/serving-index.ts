import type { DuckDBConnection } from '@duckdb/node-api';
import { rebuildExtraKeys, updateExtraKeys } from './serving-extra-keys.js';
import { refreshRecentRows } from './serving-recent.js';
import { withTransaction } from './transaction.js';

/**
 * The reader's serving index (migration 030, docs/reader.md "Paging at any depth"): per (status,
 * destination, time bucket of `created_at`) the number of current reports, so the reader turns a page
 * number into a range of buckets and reads only their rows; plus the CSV export's extra columns
 * (serving-extra-keys.ts). Buckets are `bucket_us` µs wide, a power of two chosen from the data so one
 * holds about {@link BUCKET_REPORTS} reports.
 */

/** Reports per bucket the width is chosen for (on average over the span of `created_at`). */
export const BUCKET_REPORTS = 256;
const MIN_WIDTH_US = 2n ** 10n; // ~1 ms: bucket numbers stay exact in a JS number
const MAX_WIDTH_US = 2n ** 50n; // ~36 years
const EMPTY_WIDTH_US = 2n ** 32n; // ~72 min, until there are reports to size it from

/**
 * SQL of the bucket of a TIMESTAMPTZ column for a width in µs: floor(epoch µs / width), exact in BIGINT
 * for any timestamp (DuckDB's `//` truncates towards zero, so negative epochs are corrected). The width is
 * written as a literal (it is our own number, never input): as a bound parameter the same grouping of 4M
 * reports took 7.8 s instead of 0.2 s (measured).
 */
export function bucketSql(column: string, widthUs: bigint): string {
  const us = `epoch_us(${column})`;
  const w = `${widthUs}::BIGINT`;
  return `((${us} - ((${us} % ${w}) + ${w}) % ${w}) // ${w})`;
}

/**
 * The serving index's state: its bucket width (null: never built, or emptied by a reset, which deletes
 * `reader_serving`'s row: warehouse/data-tables.ts) and version.
 */
export async function readServingMeta(
  c: DuckDBConnection,
): Promise<{ bucketUs: bigint | null; version: bigint }> {
  const row = (await c.runAndReadAll('SELECT bucket_us, version FROM reader_serving')).getRows()[0];
  return { bucketUs: (row?.[0] as bigint | null) ?? null, version: (row?.[1] as bigint | undefined) ?? 0n };
}

/**
 * Builds the index when it never was (a warehouse created or upgraded by this version) or a reset emptied
 * it. One transaction.
 */
export async function ensureServingIndex(c: DuckDBConnection): Promise<void> {
  if ((await readServingMeta(c)).bucketUs !== null) return;
  await withTransaction(c, () => rebuildServingIndex(c));
}

/**
 * Rebuilds the whole index from `report_rows` (reads every current report: on a first build, after a reset,
 * or when the data outgrew its bucket width). Call inside the caller's transaction. The version goes up
 * by one; when a reset deleted it, it starts again from the clock (µs since the epoch), past any version
 * a reader may have seen before the reset.
 *
 * @param bucketReports reports per bucket to size the width for (tests pass a small one to get many buckets)
 */
export async function rebuildServingIndex(
  c: DuckDBConnection,
  bucketReports = BUCKET_REPORTS,
): Promise<void> {
  const width = await chooseWidth(c, bucketReports);
  await c.run('DELETE FROM reader_page_counts');
  await c.run(
    `INSERT INTO reader_page_counts
     SELECT status, destination, ${bucketSql('created_at', width)} AS bucket, count(*) FROM report_rows
     WHERE removed_at IS NULL GROUP BY ALL`,
  );
  await rebuildExtraKeys(c);
  const shape = await bucketShape(c);
  await c.run(
    `CREATE OR REPLACE TEMP TABLE serving_next AS
     SELECT coalesce((SELECT max(version) + 1 FROM reader_serving), epoch_us(now())) AS version,
       (SELECT max(split_at) FROM reader_serving) AS split_at`,
  );
  await c.run('DELETE FROM reader_serving');
  await c.run(
    `INSERT INTO reader_serving (bucket_us, version, densest_limit, buckets_limit, split_at)
     SELECT $bucket_us, version, $densest, $buckets, split_at FROM serving_next`,
    {
      bucket_us: width,
      densest: BigInt(Math.max(4 * shape.densest, 16 * bucketReports)),
      buckets: BigInt(4 * shape.buckets + 1024),
    },
  );
  await c.run('DROP TABLE serving_next');
  await refreshRecentRows(c);
}

/**
 * Applies one run's changes to the index, inside the run's final transaction (after the merge, the
 * tombstones and the marks of what a full export saw, so readers see the counts with the reports they
 * count). The run's changes are the rows of `report_rows` whose `last_changed_at` is the merge time `now`
 * (an insert, update, revive or removal: warehouse/merge.ts, tombstones.ts; one merge time per run, however
 * many slices its merge took) and the versions it closed (`valid_to = now`, their state before the run):
 * each moves one report out of its old (status, destination, bucket) and into its new one. Rows a run only
 * rewrites without a change (seen, marked or unmarked unseen, a line hash) keep their `last_changed_at`,
 * and nothing the index counts. Costs what changed plus one scan of `last_changed_at`; a first load, an
 * index never built or emptied by a reset, or data that outgrew the bucket width, rebuilds instead.
 *
 * @param run.refined the run rewrote reports in place without a version (merge.ts, a refine): their known
 *   fields and `extra` take the typed values, `last_changed_at` stays and no version is closed, so neither
 *   the counts nor the extra columns can be told from the change: the index is rebuilt
 */
export async function updateServingIndex(
  c: DuckDBConnection,
  run: { now: Date; refined: boolean },
): Promise<void> {
  const meta = await readServingMeta(c);
  const now = run.now.toISOString();
  const changed = await count(
    c,
    'SELECT count(*) FROM report_rows WHERE last_changed_at = $now::TIMESTAMPTZ',
    {
      now,
    },
  );
  const current = await count(c, 'SELECT count(*) FROM report_rows WHERE removed_at IS NULL', {});
  // Most of a large warehouse changed (a first load): reading it all once is cheaper than applying it. A
  // refine rewrote rows the change cannot name (see above).
  if (meta.bucketUs === null || run.refined || (changed * 2 > current && current >= 100_000)) {
    return rebuildServingIndex(c);
  }
  if (changed > 0) {
    await applyCountChanges(c, now, meta.bucketUs);
    await updateExtraKeys(c, now);
  }
  await c.run('UPDATE reader_serving SET version = version + 1');
  if (await outgrown(c)) await rebuildServingIndex(c);
  else if (changed > 0) await refreshRecentRows(c, { changedAt: now });
}

async function applyCountChanges(c: DuckDBConnection, now: string, bucketUs: bigint): Promise<void> {
  const params = { now };
  await c.run(
    `CREATE OR REPLACE TEMP TABLE serving_count_changes AS
     SELECT status, destination, bucket, sum(d)::BIGINT AS d FROM (
       SELECT status, destination, ${bucketSql('created_at', bucketUs)} AS bucket, -1 AS d
       FROM report_versions_closed WHERE valid_to = $now::TIMESTAMPTZ AND change <> 'remove'
       UNION ALL
       SELECT status, destination, ${bucketSql('created_at', bucketUs)}, 1
       FROM report_rows WHERE last_changed_at = $now::TIMESTAMPTZ AND removed_at IS NULL)
     GROUP BY ALL HAVING sum(d) <> 0`,
    params,
  );
  await c.run(
    `MERGE INTO reader_page_counts t USING serving_count_changes d
     ON t.status = d.status AND t.destination = d.destination AND t.bucket = d.bucket
     WHEN MATCHED AND t.reports + d.d = 0 THEN DELETE
     WHEN MATCHED THEN UPDATE SET reports = t.reports + d.d
     WHEN NOT MATCHED THEN INSERT VALUES (d.status, d.destination, d.bucket, d.d)`,
  );
  await c.run('DROP TABLE serving_count_changes');
}

/** True when a bucket became much denser, or buckets much more numerous, than at the last build. */
async function outgrown(c: DuckDBConnection): Promise<boolean> {
  const shape = await bucketShape(c);
  const row = (await c.runAndReadAll('SELECT densest_limit, buckets_limit FROM reader_serving')).getRows()[0];
  return shape.densest > Number(row?.[0] ?? Infinity) || shape.buckets > Number(row?.[1] ?? Infinity);
}

async function bucketShape(c: DuckDBConnection): Promise<{ densest: number; buckets: number }> {
  const row = (
    await c.runAndReadAll(
      `SELECT coalesce(max(n), 0)::DOUBLE, count(*)::DOUBLE
       FROM (SELECT bucket, sum(reports) AS n FROM reader_page_counts GROUP BY bucket)`,
    )
  ).getRows()[0];
  return { densest: Number(row?.[0] ?? 0), buckets: Number(row?.[1] ?? 0) };
}

/**
 * The bucket width for the current reports: the power of two that gives `bucketReports` per bucket on
 * average over their span, narrowed while the densest bucket holds more than 8 times that and narrowing
 * still thins it (reports bunched in time; equal `created_at` cannot be split).
 */
async function chooseWidth(c: DuckDBConnection, bucketReports: number): Promise<bigint> {
  const row = (
    await c.runAndReadAll(
      `SELECT count(*)::DOUBLE, (epoch_us(max(created_at)) - epoch_us(min(created_at)) + 1)::DOUBLE
       FROM report_rows WHERE removed_at IS NULL`,
    )
  ).getRows()[0];
  const reports = Number(row?.[0] ?? 0);
  if (reports === 0) return EMPTY_WIDTH_US;
  let width = powerOfTwoAtLeast((Number(row?.[1]) * bucketReports) / reports);
  let densest = await densestAt(c, width);
  while (width > MIN_WIDTH_US && densest > 8 * bucketReports) {
    const narrower = width / 2n;
    const next = await densestAt(c, narrower);
    if (next >= densest) break;
    width = narrower;
    densest = next;
  }
  return width;
}

async function densestAt(c: DuckDBConnection, width: bigint): Promise<number> {
  return count(
    c,
    `SELECT max(n) FROM (SELECT count(*) AS n FROM report_rows WHERE removed_at IS NULL
     GROUP BY ${bucketSql('created_at', width)})`,
    {},
  );
}

function powerOfTwoAtLeast(us: number): bigint {
  let width = MIN_WIDTH_US;
  while (width < MAX_WIDTH_US && Number(width) < us) width *= 2n;
  return width;
}

async function count(
  c: DuckDBConnection,
  sql: string,
  params: Record<string, string | bigint>,
): Promise<number> {
  const value = (await c.runAndReadAll(sql, params)).getRows()[0]?.[0];
  return value === null || value === undefined ? 0 : Number(value);
}
