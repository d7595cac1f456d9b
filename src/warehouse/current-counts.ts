import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * A relation (SQL text to use in `FROM (…)`) of the current (not removed) reports counted by destination
 * and status, columns `destination VARCHAR`, `status VARCHAR`, `reports DOUBLE`, only pairs with at least
 * one report. When the reader's serving index is built (migration 030: every run keeps
 * `reader_page_counts` exact in its own transaction) it sums that index, a few thousand rows; otherwise it
 * counts `report_rows`. Counting `report_rows` reads three columns of every report and, on a large
 * warehouse, fills DuckDB's cache of table blocks: at 4M reports it was most of a `recent` run's peak
 * memory, spent on the summary printed after the run (docs/performance.md, "What grows with the warehouse").
 */
export async function currentCountsRelation(c: DuckDBConnection): Promise<string> {
  const built = (await c.runAndReadAll('SELECT bucket_us IS NOT NULL FROM reader_serving')).getRows()[0];
  return built?.[0] === true
    ? `SELECT destination, status, sum(reports)::DOUBLE AS reports FROM reader_page_counts
       GROUP BY ALL HAVING sum(reports) > 0`
    : `SELECT destination, status, count(*)::DOUBLE AS reports FROM report_rows
       WHERE removed_at IS NULL GROUP BY ALL`;
}
