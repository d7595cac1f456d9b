import type { DuckDBConnection } from '@duckdb/node-api';
import type { BucketCounts } from './page-windows.js';
import type { ReportFilter } from './report-rows.js';

/** A filter's bucket counts as of one version of the serving index. */
export interface VersionedCounts {
  /** `reader_serving.version` the counts were read at. */
  version: bigint;
  /** `null` when the warehouse's serving index was never built (then pages are read with OFFSET). */
  counts: BucketCounts | null;
  /**
   * `reader_serving.split_at` in epoch µs (warehouse/serving-recent.ts): reports last changed after it are
   * read from `reader_page_recent`; `null` (every report is read from `report_rows`) when not set, or when
   * the recent rows are too few to be worth a second range (see {@link MIN_SPLIT_ROWS}).
   */
  splitUs: bigint | null;
}

/**
 * The serving index's bucket counts (warehouse/serving-index.ts) per filter, read from the warehouse once
 * per version and kept in memory: a page number then costs a binary search, not a query. A filter's counts
 * come from a few thousand rows (buckets × the filter's status/destination pairs), never from `reports`.
 *
 * Counts are read with the version they belong to, in one statement; queries that use them check that
 * version again in their own statement (see report-pages.ts), so a run committing in between is noticed and
 * the counts are read again: a page is never computed from counts of one state and rows of another.
 * At most `maxFilters` filters are kept (least recently used dropped): filters are any codes clients send.
 */
export class PageIndex {
  readonly #maxFilters: number;
  readonly #minSplitRows: number;
  #version = -1n;
  #filters = new Map<string, Promise<VersionedCounts>>();

  /** @param minSplitRows recent rows from which pages read the split (tests pass 0 to always read it) */
  constructor(maxFilters = 256, minSplitRows = MIN_SPLIT_ROWS) {
    this.#maxFilters = maxFilters;
    this.#minSplitRows = minSplitRows;
  }

  /**
   * The counts of `filter`, from memory or read on `connection`. With `atVersion` (the version the
   * caller's transaction sees) they are of that version exactly; without, of the newest version seen
   * (the caller checks it in its own statement).
   */
  async counts(
    connection: DuckDBConnection,
    filter: ReportFilter,
    atVersion?: bigint,
  ): Promise<VersionedCounts> {
    if (atVersion !== undefined) {
      this.noteVersion(atVersion);
      // A transaction older than the newest version seen: its counts are its own, never kept.
      if (atVersion < this.#version) return readCounts(connection, filter, this.#minSplitRows);
    }
    const key = JSON.stringify([filter.status ?? null, filter.destination ?? null]);
    const kept = this.#filters.get(key);
    if (kept) {
      this.#filters.delete(key);
      this.#filters.set(key, kept);
      const counts = await kept;
      if (atVersion === undefined || counts.version === atVersion) return counts;
      return readCounts(connection, filter, this.#minSplitRows);
    }
    const filters = this.#filters;
    const read = readCounts(connection, filter, this.#minSplitRows);
    filters.set(key, read);
    read.then(
      (counts) => {
        this.noteVersion(counts.version);
        // Kept only in the map it was read for, and only when of the newest version.
        if (counts.version !== this.#version && filters.get(key) === read) filters.delete(key);
      },
      () => {
        if (filters.get(key) === read) filters.delete(key);
      },
    );
    for (const old of filters.keys()) {
      if (filters.size <= this.#maxFilters) break;
      filters.delete(old);
    }
    return read;
  }

  /** A query saw `version`: when newer than the counts kept, they are dropped (a run committed). */
  noteVersion(version: bigint): void {
    if (version <= this.#version) return;
    this.#version = version;
    this.#filters = new Map();
  }
}

/**
 * Recent rows (warehouse/serving-recent.ts) from which pages read the split: below one DuckDB row group a
 * page scans as many rows either way, and the two-part query cost 10–15% more (4M reports after one
 * simulated day, measured); a published copy has none (warehouse/published-tables.ts). Either query gives
 * the same rows.
 */
const MIN_SPLIT_ROWS = 122_880;

/** One statement: the version, the bucket width and the filter's reports per bucket, all of one snapshot. */
async function readCounts(
  connection: DuckDBConnection,
  filter: ReportFilter,
  minSplitRows: number,
): Promise<VersionedCounts> {
  const clauses: string[] = [];
  const params: Record<string, string | bigint> = { min_split: BigInt(minSplitRows) };
  if (filter.status !== undefined) {
    clauses.push('status = $status');
    params.status = filter.status;
  }
  if (filter.destination !== undefined) {
    clauses.push('destination = $destination');
    params.destination = filter.destination;
  }
  const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
  const reader = await connection.runAndReadAll(
    `SELECT s.version, s.bucket_us, c.bucket::DOUBLE, c.n::DOUBLE,
       CASE WHEN (SELECT max(estimated_size) FROM duckdb_tables() WHERE database_name = current_database()
         AND schema_name = 'main' AND table_name = 'reader_page_recent') >= $min_split
         THEN epoch_us(s.split_at) END
     FROM reader_serving s LEFT JOIN (
       SELECT bucket, sum(reports) AS n FROM reader_page_counts ${where} GROUP BY bucket
     ) c ON true
     ORDER BY c.bucket`,
    params,
  );
  const rows = reader.getRows();
  const version = (rows[0]?.[0] as bigint | undefined) ?? 0n;
  const bucketUs = rows[0]?.[1] as bigint | null | undefined;
  const splitUs = (rows[0]?.[4] as bigint | null | undefined) ?? null;
  if (bucketUs === null || bucketUs === undefined) return { version, counts: null, splitUs };
  const buckets: number[] = [];
  const cumulative: number[] = [];
  let total = 0;
  for (const row of rows) {
    if (row[2] === null) continue;
    buckets.push(row[2] as number);
    total += row[3] as number;
    cumulative.push(total);
  }
  return { version, counts: { bucketUs, buckets, cumulative }, splitUs };
}
