import type { DuckDBConnection } from '@duckdb/node-api';
import { failpoint } from '../util/failpoint.js';
import { withTransaction } from './transaction.js';

/**
 * Rows sorted and committed per transaction at most: a slice then needs the same memory at 1M reports as at
 * 40M (about one DuckDB row group and a half of full rows), and so does its commit. Sorting a 10M-report
 * table again in one transaction took the sync that did it from ~865 to 1,133 MiB peak RSS, most of it in
 * the commit of 10M moved rows (docs/performance.md, "The sort leaves the run's transaction").
 */
const SLICE_ROWS = 200_000;

/** Fewer rows than one DuckDB vector are not worth a rewrite: any page reads their vector whole. */
const MIN_ROWS = 2_048;

/** Tests pass small values to rewrite a few rows in many slices, or stop after some. */
export interface ReclusterOptions {
  /** Fewest rows worth a rewrite (default {@link MIN_ROWS}). */
  minRows?: number | undefined;
  /** Rows per sorted slice (default {@link SLICE_ROWS}). */
  sliceRows?: number | undefined;
  /** Called after each committed slice (0-based); a throw stops the sort there, as a crash would. */
  afterSlice?: ((slice: number) => Promise<void>) | undefined;
  /** Called once the sort knows its size: rows to rewrite and slices (for a log line: it can take a while). */
  onStart?: ((rows: number, slices: number) => void) | undefined;
  /** Once aborted, no slice starts: the rest is left for the next run (a daemon stopping waits one slice). */
  signal?: AbortSignal | undefined;
}

/** The sort a move of the serving split left to do (`reader_sort_pending`, migration 042); TIMESTAMPTZ text. */
interface PendingSort {
  /** Rows last changed after this … */
  since: string;
  /** … and at or before this are sorted again; */
  until: string;
  /** those created before this (epoch µs, exact at any date and time zone) are done (null: none yet). */
  doneBefore: bigint | null;
}

async function pendingSort(c: DuckDBConnection): Promise<PendingSort | undefined> {
  const row = (
    await c.runAndReadAll(
      'SELECT since::VARCHAR, until::VARCHAR, epoch_us(done_before) FROM reader_sort_pending LIMIT 1',
    )
  ).getRows()[0];
  if (row === undefined) return undefined;
  return {
    since: String(row[0]),
    until: String(row[1]),
    doneBefore: row[2] === null ? null : BigInt(row[2] as bigint),
  };
}

/** The rows of `report_rows` a pending sort still has to rewrite, created in [`lo`, `hi`) when given. */
function rangeSql(p: PendingSort, lo: bigint | null, hi: bigint | null) {
  const params: Record<string, string | bigint> = { since: p.since, until: p.until };
  let sql = 'last_changed_at > $since::TIMESTAMPTZ AND last_changed_at <= $until::TIMESTAMPTZ';
  if (lo !== null) {
    sql += ' AND created_at >= make_timestamptz($lo::BIGINT)';
    params.lo = lo;
  }
  if (hi !== null) {
    sql += ' AND created_at < make_timestamptz($hi::BIGINT)';
    params.hi = hi;
  }
  return { sql, params };
}

/**
 * Bounds of `slices` slices of about equal rows over `created_at`, from `lo` (null: the start) to the end:
 * quantiles of the rows' `created_at` (ties stay together: a row goes to the slice whose lower bound it
 * reaches).
 */
async function sliceBounds(
  c: DuckDBConnection,
  p: PendingSort,
  lo: bigint | null,
  slices: number,
): Promise<(bigint | null)[]> {
  const bounds: (bigint | null)[] = [lo];
  if (slices > 1) {
    const qs = Array.from({ length: slices - 1 }, (_, k) => ((k + 1) / slices).toFixed(6)).join(', ');
    const range = rangeSql(p, lo, null);
    const row = (
      await c.runAndReadAll(
        `SELECT list_transform(quantile_disc(created_at, [${qs}]), x -> epoch_us(x)) FROM report_rows
         WHERE ${range.sql}`,
        range.params,
      )
    ).getRows()[0];
    for (const b of (row?.[0] as { items: bigint[] } | undefined)?.items ?? []) bounds.push(BigInt(b));
  }
  bounds.push(null);
  return bounds;
}

/**
 * Stores again, in `created_at, id` order at the end of `report_rows`, the rows a move of the serving split
 * left to sort (`reader_sort_pending`, written by sorted-runs.ts in the run's transaction), one slice of
 * {@link SLICE_ROWS} rows per transaction: each copies its rows sorted into a TEMP table, deletes them and
 * appends them back (DuckDB keeps insertion order, `preserve_insertion_order`), and records how far it got.
 * Every commit holds the same reports with the same columns, so readers see no difference but the order;
 * a crash between slices leaves the rest for the next call, which the next run makes once it commits
 * (sync/sort-left-behind.ts). Returns the rows rewritten (those still to do when `o.signal` stopped it).
 *
 * Why the order matters: a run writes the reports it changes at the end of the table, so those row groups
 * span the whole `created_at` axis and every list page read all of them (4M after 14 nights and a move of
 * the split: a page 8.95 ms, 4.9–5.5 ms once sorted; docs/performance.md, "The reader at scale").
 *
 * @throws DuckDB errors as they are (the slice under way rolls back; those committed stay)
 */
export async function sortPendingRows(c: DuckDBConnection, o: ReclusterOptions = {}): Promise<number> {
  const p = await pendingSort(c);
  if (p === undefined) return 0;
  const all = rangeSql(p, p.doneBefore, null);
  const n = Number(
    (
      await c.runAndReadAll(`SELECT count(*)::DOUBLE FROM report_rows WHERE ${all.sql}`, all.params)
    ).getRows()[0]?.[0] ?? 0,
  );
  // Too few to be worth it, unless a sort under way left them (the rest of a run must follow the rows done).
  if (n === 0 || (p.doneBefore === null && n < (o.minRows ?? MIN_ROWS))) {
    await c.run('DELETE FROM reader_sort_pending');
    return 0;
  }
  const slices = Math.ceil(n / (o.sliceRows ?? SLICE_ROWS));
  o.onStart?.(n, slices);
  const bounds = await sliceBounds(c, p, p.doneBefore, slices);
  // The plan this sort read: a later move replaces it (and starts over from its own `since`).
  const mine = 'since = $since::TIMESTAMPTZ AND until = $until::TIMESTAMPTZ';
  const plan = { since: p.since, until: p.until };
  for (let k = 0; k + 1 < bounds.length && o.signal?.aborted !== true; k++) {
    const slice = rangeSql(p, bounds[k] ?? null, bounds[k + 1] ?? null);
    await withTransaction(c, async () => {
      await c.run(
        `CREATE OR REPLACE TEMP TABLE sorted_slice AS
         SELECT * FROM report_rows WHERE ${slice.sql} ORDER BY created_at, id`,
        slice.params,
      );
      await c.run(`DELETE FROM report_rows WHERE ${slice.sql}`, slice.params);
      await c.run('INSERT INTO report_rows SELECT * FROM sorted_slice');
      await c.run('DROP TABLE sorted_slice');
      await failpoint('sort-slice');
      if (bounds[k + 1] === null) await c.run(`DELETE FROM reader_sort_pending WHERE ${mine}`, plan);
      else {
        await c.run(
          `UPDATE reader_sort_pending SET done_before = make_timestamptz($hi::BIGINT) WHERE ${mine}`,
          {
            ...plan,
            hi: bounds[k + 1]!,
          },
        );
      }
    });
    await o.afterSlice?.(k);
  }
  return n;
}
