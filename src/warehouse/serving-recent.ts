import type { DuckDBConnection } from '@duckdb/node-api';
import { planSortOnMove } from './sorted-runs.js';

/**
 * The reader's recent rows (migration 031, docs/reader.md "Paging at any depth"). The current reports last
 * changed after `reader_serving.split_at` live, for the reader, in `reader_page_recent`, sorted by
 * `created_at`; the others are read from `report_rows`, where they lie in the order of the load that wrote
 * them. A list page then reads one time window of each (zone maps skip the rest of both), however many runs
 * appended their changes to `report_rows` since the split. A run that changed many reports rewrites the
 * recent rows sorted (its cost follows the reports changed since the split, kept below
 * {@link MAX_RECENT_SHARE} of the current ones by moving the split to the newest change: the recent rows then
 * start empty, and the rows they held are stored again in `report_rows` sorted by `created_at` once the run
 * commits, merged with earlier such runs so they stay few (sorted-runs.ts, recluster.ts), and a page reads
 * only the part of each its window covers); one that changed few appends its own (a page then also reads
 * the last row group of the recent rows, until the next rewrite).
 */

/** Share of the current reports the recent rows may hold before the split moves. */
export const MAX_RECENT_SHARE = 1 / 8;
/** Recent rows always allowed (one DuckDB row group: rewriting them is cheap at any size). */
export const MIN_RECENT_ROWS = 122_880;
/** Share of the recent rows that may be appended out of order before they are rewritten sorted. */
export const MAX_APPENDED_SHARE = 1 / 8;

/** The columns of `reader_page_recent`, in table order. */
const RECENT_COLUMNS =
  'id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra, removed_at';

/** How to bring the recent rows up to date. */
export interface RecentRefresh {
  /** The run's merge time (ISO): its changed reports are those with this `last_changed_at`. */
  changedAt?: string | undefined;
  /** Recent rows allowed (default: {@link MIN_RECENT_ROWS} or {@link MAX_RECENT_SHARE} of the current reports). */
  maxRows?: number | undefined;
  /** Appended share allowed (default {@link MAX_APPENDED_SHARE}); tests pass 0 or 1 to force either way. */
  appendShare?: number | undefined;
}

/**
 * Brings `reader_page_recent` up to date with `report_rows` for the split in `reader_serving`: appends the
 * run's changes (`o.changedAt`) when they are few, else rewrites it whole, sorted (setting the split to the
 * newest `last_changed_at` first when it is not set or the recent rows would exceed the limit). Call
 * inside the transaction that bumps the serving index's version (the reader keeps the split per version).
 *
 * @throws DuckDB errors as they are
 */
export async function refreshRecentRows(c: DuckDBConnection, o: RecentRefresh = {}): Promise<void> {
  const state = await recentState(c, o.changedAt);
  if (state === undefined) return;
  const limit = o.maxRows ?? Math.max(MIN_RECENT_ROWS, MAX_RECENT_SHARE * state.current);
  const moveSplit = state.unset || state.recent > limit;
  const appended = state.appended + state.changed;
  if (
    !moveSplit &&
    o.changedAt !== undefined &&
    appended <= (o.appendShare ?? MAX_APPENDED_SHARE) * state.recent
  ) {
    const params = { now: o.changedAt };
    await c.run(
      `DELETE FROM reader_page_recent WHERE id IN (SELECT id FROM report_rows WHERE last_changed_at = $now::TIMESTAMPTZ)`,
      params,
    );
    await c.run(
      `INSERT INTO reader_page_recent SELECT ${RECENT_COLUMNS} FROM report_rows
       WHERE last_changed_at = $now::TIMESTAMPTZ AND removed_at IS NULL ORDER BY created_at, id`,
      params,
    );
    await c.run('UPDATE reader_serving SET recent_appended = $n', { n: BigInt(appended) });
    return;
  }
  if (moveSplit) {
    // The rows the split stops reading from the recent rows are stored again in `created_at` order
    // (merged with earlier sorted runs, sorted-runs.ts); a split set anew starts without runs.
    if (state.unset) {
      await c.run('DELETE FROM reader_sorted_runs');
      await c.run('DELETE FROM reader_sort_pending');
    } else await planSortOnMove(c, state.splitAt);
    await c.run('UPDATE reader_serving SET split_at = (SELECT max(last_changed_at) FROM report_rows)');
  }
  await c.run('DELETE FROM reader_page_recent');
  const split = (await c.runAndReadAll('SELECT split_at::VARCHAR FROM reader_serving')).getRows()[0]?.[0];
  await c.run(
    `INSERT INTO reader_page_recent
     SELECT ${RECENT_COLUMNS} FROM report_rows
     WHERE last_changed_at > $split::TIMESTAMPTZ AND removed_at IS NULL
     ORDER BY created_at, id`,
    { split: split == null ? null : String(split) },
  );
  await c.run('UPDATE reader_serving SET recent_appended = 0');
}

/**
 * The split's state: unset, recent rows it selects now, current reports, appended rows, the run's changes,
 * and the split itself (TIMESTAMPTZ text, '' when unset).
 */
async function recentState(
  c: DuckDBConnection,
  changedAt: string | undefined,
): Promise<
  | { unset: boolean; recent: number; current: number; appended: number; changed: number; splitAt: string }
  | undefined
> {
  const row = (
    await c.runAndReadAll(
      `SELECT s.split_at IS NULL,
         (SELECT count(*) FROM report_rows r WHERE r.last_changed_at > s.split_at AND r.removed_at IS NULL)::DOUBLE,
         (SELECT count(*) FROM report_rows WHERE removed_at IS NULL)::DOUBLE,
         coalesce(s.recent_appended, 0)::DOUBLE,
         (SELECT count(*) FROM report_rows WHERE last_changed_at = $now::TIMESTAMPTZ)::DOUBLE,
         coalesce(s.split_at::VARCHAR, '')
       FROM reader_serving s`,
      { now: changedAt ?? null },
    )
  ).getRows()[0];
  if (row === undefined) return undefined;
  const n = (i: number) => Number(row[i] ?? 0);
  return {
    unset: row[0] === true,
    recent: n(1),
    current: n(2),
    appended: n(3),
    changed: n(4),
    splitAt: String(row[5]),
  };
}
