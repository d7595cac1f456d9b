import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * The reader's recent rows (migration 031, docs/reader.md "Paging at any depth"). The current reports last
 * changed after `reader_serving.split_at` live, for the reader, in `reader_page_recent`, sorted by
 * `created_at`; the others are read from `report_rows`, where they lie in the order of the load that wrote
 * them. A list page then reads one time window of each (zone maps skip the rest of both), however many runs
 * appended their changes to `report_rows` since the split. Each run rewrites the recent rows whole: its
 * cost follows the reports changed since the split, kept below {@link MAX_RECENT_SHARE} of the current ones
 * by moving the split to the newest change (the recent rows then start empty, and `report_rows`' appended
 * row groups are read by every page again until a load rewrites it in order).
 */

/** Share of the current reports the recent rows may hold before the split moves. */
export const MAX_RECENT_SHARE = 1 / 8;
/** Recent rows always allowed (one DuckDB row group: rewriting them is cheap at any size). */
export const MIN_RECENT_ROWS = 122_880;

/** The columns of `reader_page_recent`, in table order. */
const RECENT_COLUMNS =
  'id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra, removed_at';

/**
 * Rewrites `reader_page_recent` from `report_rows` for the split in `reader_serving` (setting the split to
 * the newest `last_changed_at` when it is not set, or when the recent rows would exceed `maxRows`). Call
 * inside the transaction that bumps the serving index's version (the reader keeps the split per version).
 *
 * @param maxRows recent rows allowed (default: {@link MIN_RECENT_ROWS} or {@link MAX_RECENT_SHARE} of the
 *   current reports, whichever is more); tests pass small ones to move the split often
 * @throws DuckDB errors as they are
 */
export async function refreshRecentRows(c: DuckDBConnection, maxRows?: number): Promise<void> {
  const row = (
    await c.runAndReadAll(
      `SELECT s.split_at IS NULL,
         (SELECT count(*) FROM report_rows r WHERE r.last_changed_at > s.split_at AND r.removed_at IS NULL)::DOUBLE,
         (SELECT count(*) FROM report_rows WHERE removed_at IS NULL)::DOUBLE
       FROM reader_serving s`,
    )
  ).getRows()[0];
  if (row === undefined) return;
  const [unset, recent, current] = [row[0] === true, Number(row[1] ?? 0), Number(row[2] ?? 0)];
  const limit = maxRows ?? Math.max(MIN_RECENT_ROWS, MAX_RECENT_SHARE * current);
  if (unset || recent > limit) {
    await c.run('UPDATE reader_serving SET split_at = (SELECT max(last_changed_at) FROM report_rows)');
  }
  await c.run('DELETE FROM reader_page_recent');
  await c.run(
    `INSERT INTO reader_page_recent
     SELECT ${RECENT_COLUMNS} FROM report_rows
     WHERE last_changed_at > (SELECT split_at FROM reader_serving) AND removed_at IS NULL
     ORDER BY created_at, id`,
  );
}
