/**
 * The reader's paging arithmetic, free of any database: from how many reports a filter has per time
 * bucket of `created_at`, which `created_at` range holds page P and how many of its rows come before the
 * page. A page is then one seek (`created_at >= from AND created_at < to ORDER BY … LIMIT n OFFSET skip`)
 * over a few buckets instead of an OFFSET over every report before it; an export is read range by range
 * in order. Any engine that keeps the same counts (warehouse/serving-index.ts for DuckDB) can use it.
 *
 * Buckets hold whole `created_at` values, so the list order (`created_at` DESC, then `id`) and the export
 * order (`created_at` ASC, then `id`) each read a bucket's rows together: ties on `created_at` never
 * straddle two buckets.
 */

/** One filter's reports per bucket. */
export interface BucketCounts {
  /** Bucket width in µs: bucket `b` holds `created_at` in `[b × bucketUs, (b + 1) × bucketUs)` (epoch µs). */
  bucketUs: bigint;
  /** Bucket numbers holding at least one report, ascending. */
  buckets: readonly number[];
  /** `cumulative[k]`: reports in `buckets[0..k]`, so the last one is the filter's total. */
  cumulative: readonly number[];
}

/** `newest`: the list and GeoJSON order; `oldest`: the CSV and NDJSON export order. */
export type PageOrder = 'newest' | 'oldest';

/** The rows of a page: `created_at` in `[fromUs, toUs)` in the page's order, `skip` rows dropped, then `limit`. */
export interface PageWindow {
  fromUs: bigint;
  toUs: bigint;
  skip: number;
  limit: number;
}

/** Reports the counts hold. */
export function totalOf(counts: BucketCounts): number {
  return counts.cumulative.at(-1) ?? 0;
}

/**
 * The window of rows `offset … offset + limit - 1` (0-based) in `order`, or `null` when the page starts
 * past the end (an empty page). The range covers the buckets of the page's first and last row.
 */
export function pageWindow(
  counts: BucketCounts,
  order: PageOrder,
  offset: number,
  limit: number,
): PageWindow | null {
  const total = totalOf(counts);
  if (offset >= total || limit <= 0) return null;
  const last = Math.min(offset + limit, total) - 1;
  // Position p in the export order (oldest first) lies in the first bucket whose cumulative count exceeds p;
  // in the list order, position p is position total - 1 - p of the export order.
  const asc = (p: number) => (order === 'oldest' ? p : total - 1 - p);
  const first = bucketAt(counts.cumulative, asc(offset));
  const end = bucketAt(counts.cumulative, asc(last));
  const [lo, hi] = first <= end ? [first, end] : [end, first];
  const skipped = order === 'oldest' ? rowsBefore(counts, first) : total - counts.cumulative[first]!;
  return { ...rangeOf(counts, lo, hi), skip: offset - skipped, limit };
}

/** Before and after every timestamp a report can hold (±2^62 µs, about 146,000 years from 1970). */
export const TIME_START_US = -(2n ** 62n);
export const TIME_END_US = 2n ** 62n;

/**
 * The whole time axis as consecutive windows in `order`, each of whole buckets and about `rowsPerWindow`
 * of the filter's reports (more when one bucket alone holds more): an export reads them one after the
 * other. The windows touch (each starts where the previous one ends, the first at {@link TIME_START_US},
 * the last ends at {@link TIME_END_US}), so a report is exported even if the counts missed it; they only
 * decide where the reading is cut.
 */
export function exportWindows(counts: BucketCounts, order: PageOrder, rowsPerWindow: number): PageWindow[] {
  const windows: PageWindow[] = [];
  const n = counts.buckets.length;
  let start = 0;
  let fromUs = TIME_START_US;
  while (start < n) {
    let end = start;
    const base = rowsBefore(counts, start);
    while (end + 1 < n && counts.cumulative[end + 1]! - base <= rowsPerWindow) end++;
    const toUs = end + 1 < n ? rangeOf(counts, end, end).toUs : TIME_END_US;
    windows.push({ fromUs, toUs, skip: 0, limit: counts.cumulative[end]! - base });
    fromUs = toUs;
    start = end + 1;
  }
  if (windows.length === 0) windows.push({ fromUs, toUs: TIME_END_US, skip: 0, limit: 0 });
  return order === 'oldest' ? windows : windows.reverse();
}

/** Reports in buckets before index `k`. */
function rowsBefore(counts: BucketCounts, k: number): number {
  return k === 0 ? 0 : counts.cumulative[k - 1]!;
}

function rangeOf(counts: BucketCounts, lo: number, hi: number): { fromUs: bigint; toUs: bigint } {
  return {
    fromUs: BigInt(counts.buckets[lo]!) * counts.bucketUs,
    toUs: (BigInt(counts.buckets[hi]!) + 1n) * counts.bucketUs,
  };
}

/** Index of the first entry of `cumulative` (ascending) greater than `position` (binary search). */
function bucketAt(cumulative: readonly number[], position: number): number {
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cumulative[mid]! > position) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
