import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * The sorted runs of `report_rows` (migration 042). Each move of the serving split (serving-recent.ts)
 * stores the rows changed since the previous split again sorted by `created_at` at the end of the table
 * (recluster.ts): one more sorted run. A list page reads, in each run, the part its time window covers, so
 * a page cost one run's share more per move (4M reports: ~0.65 ms a run, 4.7 ms with one run, 15.7 ms with
 * sixteen; docs/performance.md, "Pages and age: sorted runs merged"), without bound as a warehouse lives on.
 *
 * So a move merges runs as a binary counter does: the new run absorbs the run before it while that run holds
 * no more rows than all it absorbed so far, and so on back to the base (the rows changed before the first
 * run: the load's order, or the last full re-sort). Then each run holds more rows than all newer ones
 * together had when it was formed, and the runs fewer than the base: about log2(reports / rows per move)
 * runs (one to three, a move being an eighth of the reports; never more than {@link MAX_SORTED_RUNS}). A
 * row is rewritten a few times over the warehouse's life, and the whole table once the runs reach half of
 * it (every eighth move when moves are alike; 4M: 15–18 s, 10M: 32–41 s, after the run commits).
 */

/**
 * Sorted runs kept at most, whatever the sizes of moves: a warehouse whose moves shrink (fewer reports)
 * would otherwise keep each new run beside a larger one. A page then reads at most this many runs and the
 * base (4M reports: ~+0.65 ms a run).
 */
export const MAX_SORTED_RUNS = 4;

/**
 * Which runs a move merges, oldest first: `sizes[0]` is the base, `sizes[i]` the i-th run (rows now in it),
 * `newRows` the rows changed since the split. Returns the index of the oldest run merged: `sizes.length`
 * when none is (the new run stands alone), 0 when the base is too (the whole table is sorted again). The
 * runs after the move number the index returned, at most {@link MAX_SORTED_RUNS}.
 */
export function oldestMerged(sizes: readonly number[], newRows: number): number {
  let merged = newRows;
  let k = sizes.length;
  while (k > 0 && (sizes[k - 1]! <= merged || k > MAX_SORTED_RUNS)) {
    k -= 1;
    merged += sizes[k]!;
  }
  return k;
}

/** The sorted runs' starts, oldest first (TIMESTAMPTZ text: a run holds the rows changed after it). */
async function runStarts(c: DuckDBConnection): Promise<string[]> {
  const rows = await c.runAndReadAll(
    'SELECT starts_after::VARCHAR FROM reader_sorted_runs ORDER BY starts_after',
  );
  return rows.getRows().map((r) => String(r[0]));
}

/** Rows of the base, of each run, and changed after the split, by `last_changed_at` (one narrow scan). */
async function runSizes(c: DuckDBConnection, bounds: readonly string[]): Promise<number[]> {
  const params: Record<string, string> = {};
  const parts = bounds.map((b, i) => {
    params[`b${i}`] = b;
    const lower = i === 0 ? 'true' : `last_changed_at > $b${i - 1}::TIMESTAMPTZ`;
    return `count(*) FILTER (WHERE ${lower} AND last_changed_at <= $b${i}::TIMESTAMPTZ)::DOUBLE`;
  });
  parts.push(`count(*) FILTER (WHERE last_changed_at > $b${bounds.length - 1}::TIMESTAMPTZ)::DOUBLE`);
  const row = (await c.runAndReadAll(`SELECT ${parts.join(', ')} FROM report_rows`, params)).getRows()[0];
  return (row ?? []).map((v) => Number(v ?? 0));
}

/**
 * Plans, for a move of the split from `splitAt` (TIMESTAMPTZ text) to the newest change, the sort of the
 * rows it leaves behind merged with the runs {@link oldestMerged} picks: records the runs in
 * `reader_sorted_runs` and the sort in `reader_sort_pending` (rows last changed after the start it picks,
 * `-infinity` for the whole table, and at or before the newest change), which recluster.ts carries out in
 * slices once the run commits. A sort left unfinished (a crash) is folded in: the new one starts at the
 * earlier of the two. Call in the run's transaction, before the split moves (serving-recent.ts).
 *
 * @throws DuckDB errors as they are (the caller's transaction then rolls back)
 */
export async function planSortOnMove(c: DuckDBConnection, splitAt: string): Promise<void> {
  const starts = await runStarts(c);
  const sizes = await runSizes(c, [...starts, splitAt]);
  const newRows = sizes.pop()!;
  const k = oldestMerged(sizes, newRows);
  const planned = k === 0 ? '-infinity' : k === sizes.length ? splitAt : starts[k - 1]!;
  const since = String(
    (
      await c.runAndReadAll(
        `SELECT least($planned::TIMESTAMPTZ, (SELECT min(since) FROM reader_sort_pending))::VARCHAR`,
        { planned },
      )
    ).getRows()[0]?.[0] ?? planned,
  );
  await c.run(`DELETE FROM reader_sorted_runs WHERE starts_after >= $since::TIMESTAMPTZ`, { since });
  if (since !== '-infinity') {
    await c.run(`INSERT INTO reader_sorted_runs VALUES ($since::TIMESTAMPTZ)`, { since });
  }
  await c.run('DELETE FROM reader_sort_pending');
  await c.run(
    `INSERT INTO reader_sort_pending SELECT $since::TIMESTAMPTZ, max(last_changed_at), NULL FROM report_rows`,
    { since },
  );
}
