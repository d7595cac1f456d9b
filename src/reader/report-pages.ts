import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { Report } from '../schema/wire-format.js';
import type { PageIndex } from './page-index.js';
import {
  exportWindows,
  pageWindow,
  totalOf,
  type BucketCounts,
  type PageOrder,
  type PageWindow,
} from './page-windows.js';
import { runPrepared } from './prepared.js';
import { withQueryTimeout } from './query-timeout.js';
import {
  EXPORT_ORDER_SQL,
  NEWEST_FIRST_SQL,
  REPORT_COLUMNS_SQL,
  REPORT_COLUMN_COUNT,
  reportConditions,
  type ReportFilter,
} from './report-rows.js';
import { streamReports } from './stream-reports.js';

/**
 * The reader's queries for pages and exports at any depth (docs/reader.md "Paging at any depth"): a page
 * is read from the few time buckets that hold it (page-windows.ts), an export bucket range by bucket
 * range in order, so no query sorts or skips the reports before the ones it returns. When the warehouse
 * has no serving index the same answers come from plain `ORDER BY … LIMIT … OFFSET` queries. All read the
 * stored rows (`report_rows`, current ones `removed_at IS NULL`): the `reports` view adds a join for the
 * columns it lifts (migration 020), none of which the reader serves.
 */

/** Rows per query while an export walks its windows: a sort of that many rows at a time. */
const EXPORT_WINDOW_ROWS = 16_384;

/** What a page query needs besides the connection. */
export interface PageQuery {
  index: PageIndex;
  filter: ReportFilter;
  timeoutMs: number;
  /** Names the query in timeout messages. */
  what: string;
}

/**
 * Rows (`REPORT_COLUMNS_SQL`) of list page `page` (1-based) of `pageSize` reports, newest first, and the
 * serving index's version they were read at (null without an index: see {@link servingVersion}). Runs
 * without a transaction: the row query reads the serving index's version in the same statement (a page
 * past the end reads only the version) and, when the counts used were of another version (a run
 * committed meanwhile), the counts are read again. Rows that disagree with the counts (there should be
 * none) are read again with OFFSET, so an answer is never wrong, at worst slow.
 *
 * @throws SyncError `READER_QUERY_TIMEOUT` past the timeout; DuckDB errors as they are
 */
export async function listPageRows(
  connection: DuckDBConnection,
  q: PageQuery,
  page: number,
  pageSize: number,
): Promise<{ rows: DuckDBValue[][]; version: bigint | null }> {
  const offset = (page - 1) * pageSize;
  const conditions = reportConditions(q.filter);
  for (let attempt = 0; attempt < 3; attempt++) {
    const { version, counts, splitUs } = await withQueryTimeout(connection, q.timeoutMs, q.what, () =>
      q.index.counts(connection, q.filter),
    );
    if (counts === null) break;
    const window = pageWindow(counts, 'newest', offset, pageSize);
    if (window === null) {
      // Past the end by these counts: so it is if they are still current.
      const current = await withQueryTimeout(connection, q.timeoutMs, q.what, () =>
        runPrepared(connection, 'SELECT version FROM reader_serving', {}),
      );
      const seen = current[0]?.[0] as bigint | undefined;
      if (seen === version) return { rows: [], version };
      q.index.noteVersion(seen ?? version);
      continue;
    }
    const split = splitUs !== null;
    const sql = windowSql(conditions.sql, 'newest', { paged: true, version: true, split });
    const params = {
      ...conditions.params,
      ...windowParams(window, true),
      ...(split ? { split_us: splitUs } : {}),
    };
    const rows = await withQueryTimeout(connection, q.timeoutMs, q.what, () =>
      runPrepared(connection, sql, params),
    );
    const seen = rows[0]?.[REPORT_COLUMN_COUNT] as bigint | undefined;
    const expected = Math.min(pageSize, totalOf(counts) - offset);
    if (seen === version && rows.length === expected) return { rows, version };
    // Counts of another version than the rows (a run committed): read them again.
    q.index.noteVersion(seen ?? (await servingVersion(connection)) ?? version);
  }
  const sql = `SELECT ${REPORT_COLUMNS_SQL} FROM report_rows WHERE ${conditions.sql}
    ORDER BY ${NEWEST_FIRST_SQL} LIMIT $limit OFFSET $offset`;
  const params = { ...conditions.params, limit: BigInt(pageSize), offset: BigInt(offset) };
  // Rare (no serving index, or counts that kept disagreeing): the version read beside, not with, the rows.
  const version = await servingVersion(connection);
  const rows = (
    await withQueryTimeout(connection, q.timeoutMs, q.what, () => connection.runAndReadAll(sql, params))
  ).getRows();
  return { rows, version };
}

/** The serving index's version the connection's snapshot sees, or null when it was never built. */
export async function servingVersion(connection: DuckDBConnection): Promise<bigint | null> {
  const row = (await connection.runAndReadAll('SELECT version, bucket_us FROM reader_serving')).getRows()[0];
  return row === undefined || row[1] === null ? null : (row[0] as bigint);
}

/**
 * The counts of `filter` at the version `connection`'s transaction sees (so they agree with every query
 * of that transaction), or null when the warehouse has no serving index.
 */
export async function countsInTransaction(
  connection: DuckDBConnection,
  q: PageQuery,
): Promise<BucketCounts | null> {
  return withQueryTimeout(connection, q.timeoutMs, q.what, async () => {
    const version = await servingVersion(connection);
    if (version === null) return null;
    return (await q.index.counts(connection, q.filter, version)).counts;
  });
}

/**
 * Streams reports of `filter` (and `extraWhere`, a clause on `report_rows`) in `order`, chunk by chunk: one
 * page (`offset`, `limit`) or, with `limit` undefined, all of them. Run it inside a read transaction
 * whose `counts` these are (see {@link countsInTransaction}); `counts` null reads with one plain query.
 */
export async function* streamPage(
  connection: DuckDBConnection,
  q: PageQuery,
  counts: BucketCounts | null,
  order: PageOrder,
  range: { offset: number; limit?: number | undefined; extraWhere?: string },
): AsyncGenerator<Report[]> {
  const where = reportConditions(q.filter);
  const conditions = range.extraWhere === undefined ? where.sql : `${where.sql} AND ${range.extraWhere}`;
  const orderSql = order === 'newest' ? NEWEST_FIRST_SQL : EXPORT_ORDER_SQL;
  if (counts === null) {
    const paging = range.limit === undefined ? '' : 'LIMIT $limit OFFSET $offset';
    const params =
      range.limit === undefined
        ? where.params
        : { ...where.params, limit: BigInt(range.limit), offset: BigInt(range.offset) };
    const sql = `SELECT ${REPORT_COLUMNS_SQL} FROM report_rows WHERE ${conditions} ORDER BY ${orderSql} ${paging}`;
    yield* streamReports(connection, sql, params, q.timeoutMs, q.what);
    return;
  }
  const windows =
    range.limit === undefined
      ? exportWindows(counts, order, EXPORT_WINDOW_ROWS)
      : [pageWindow(counts, order, range.offset, range.limit)].filter((w) => w !== null);
  const paged = range.limit !== undefined;
  const sql = windowSql(conditions, order, { paged, version: false, split: false });
  for (const window of windows) {
    const params = { ...where.params, ...windowParams(window, paged) };
    yield* streamReports(connection, sql, params, q.timeoutMs, q.what);
  }
}

/** The stored columns a page reads, as both `report_rows` and `reader_page_recent` name them. */
const STORED_COLUMNS =
  'id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra, removed_at';

/**
 * The reports of one window: `created_at` in its range (DuckDB's zone maps skip the row groups outside
 * it), in `order`; `paged` drops `skip` rows and keeps `limit`; `version` appends the serving index's
 * version as a last column (read in the same snapshot as the rows); `split` reads the reports last changed
 * after `$split_us` from `reader_page_recent` (kept sorted by `created_at`) and only the others from
 * `report_rows`, whose zone maps on `last_changed_at` then skip the row groups later runs appended (each
 * spans the whole time axis, so those on `created_at` cannot): warehouse/serving-recent.ts.
 *
 * The filter is wrapped in `(…) IS TRUE` (the same rows: every column it reads is NOT NULL or tested with
 * IS NULL) so DuckDB does not push its equalities into the scan: there they are evaluated on every row of
 * each row group the time range touches (~120k rows) before the time range is; after the scan they only
 * see the window's rows. Measured on 4M reports: a window's count 2.9 → 0.9 ms, a page 4.4 → 2.6 ms.
 * The version column also keeps DuckDB from its late materialisation of `LIMIT` ≤ 50 queries (a second
 * scan filtered on `rowid`, which DuckDB 1.5 does not seek with: it read all 4M rows, a page took ~7 ms).
 */
function windowSql(
  conditions: string,
  order: PageOrder,
  o: { paged: boolean; version: boolean; split: boolean },
): string {
  const orderSql = order === 'newest' ? NEWEST_FIRST_SQL : EXPORT_ORDER_SQL;
  const version = o.version ? ', (SELECT version FROM reader_serving) AS serving_version' : '';
  const range = `created_at >= make_timestamptz($from_us::BIGINT) AND created_at < make_timestamptz($to_us::BIGINT)
      AND (${conditions}) IS TRUE`;
  const source = o.split
    ? `(SELECT ${STORED_COLUMNS} FROM report_rows
        WHERE ${range} AND last_changed_at <= make_timestamptz($split_us::BIGINT)
        UNION ALL
        SELECT ${STORED_COLUMNS} FROM reader_page_recent WHERE ${range})`
    : `report_rows WHERE ${range}`;
  return `SELECT ${REPORT_COLUMNS_SQL}${version} FROM ${source}
    ORDER BY ${orderSql}${o.paged ? ' LIMIT $limit OFFSET $skip' : ''}`;
}

function windowParams(window: PageWindow, paged: boolean): Record<string, bigint> {
  const range = { from_us: window.fromUs, to_us: window.toUs };
  return paged ? { ...range, limit: BigInt(window.limit), skip: BigInt(window.skip) } : range;
}
