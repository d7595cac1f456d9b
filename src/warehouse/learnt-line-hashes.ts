import type { DuckDBConnection } from '@duckdb/node-api';
import { withCheckpointsDeferred } from './deferred-checkpoint.js';
import { lineHashColumn } from './line-hash-column.js';

/**
 * A full export's staged rows whose content the warehouse holds: the report keeps the hash of the line it
 * came in (the next run of this source then knows it). Only that fixed-width column is updated in place
 * (an `UPDATE` of it is cheap: no string heap, one column rewritten), in `slices` ranges of `rowid`, each
 * its own transaction (a CSV run on a warehouse the NDJSON export filled updates every row: see
 * `prepareMerge` in merge.ts); `last_seen_at` and `run_id` come with the run's end for every report it saw
 * (merge-seen.ts). A report marked unseen is rewritten whole by the merge's `applyChanges` (merge.ts).
 *
 * By `rowid` (`merge_batch.row_id`, read with the stored row), not by a hash of the id: a range's rows
 * sit in a few row groups, which the scan alone reads (DuckDB pushes a `rowid` range into it), where a
 * hash slice touched rows of every row group: 16 slices of 4M reports took 2.8 s each against ~60 ms
 * (measured). The id is compared too: a row a checkpoint moved keeps its old hash, a cache miss that the
 * next run reads as a changed line, never a wrong hash.
 */
export async function storeLineHashes(
  c: DuckDBConnection,
  run: { source: string },
  slices: number,
): Promise<void> {
  const hash = lineHashColumn(run.source);
  const learnt = `change = 'unchanged' AND line_hash IS NOT NULL AND row_id IS NOT NULL`;
  const bounds = await rowIdBounds(c, learnt, slices);
  await withCheckpointsDeferred(c, async () => {
    for (const [from, to] of bounds) {
      await c.run(
        `UPDATE report_rows SET ${hash} = b.line_hash
         FROM (SELECT id, row_id, line_hash FROM merge_batch
               WHERE ${learnt} AND row_id >= ${from} AND row_id < ${to}) b
         WHERE report_rows.rowid = b.row_id AND report_rows.rowid >= ${from} AND report_rows.rowid < ${to}
           AND report_rows.id = b.id AND report_rows.unseen_since IS NULL
           AND b.line_hash IS DISTINCT FROM report_rows.${hash}`,
      );
    }
  });
}

/**
 * `slices` ranges `[from, to)` of the `row_id`s of the `merge_batch` rows `where` selects, each holding
 * about as many of them (approximate quantiles: learnt rows may cluster in a part of the table; a t-digest
 * of bounded memory, where an exact quantile holds every value), none when no row is selected. The cuts
 * only split the work: any cuts cover `[min, max]` whole. Empty ranges are left out.
 */
async function rowIdBounds(c: DuckDBConnection, where: string, slices: number): Promise<[number, number][]> {
  const cuts = Array.from({ length: slices - 1 }, (_, i) => (i + 1) / slices);
  const row = (
    await c.runAndReadAll(
      `SELECT min(row_id) AS lo, max(row_id) + 1 AS hi${cuts.length > 0 ? `, approx_quantile(row_id, [${cuts.join(', ')}]) AS cuts` : ''}
       FROM merge_batch WHERE ${where}`,
    )
  ).getRowObjectsJS()[0]!;
  if (row.lo === null) return [];
  const [lo, hi] = [Number(row.lo), Number(row.hi)];
  const inside = ((row.cuts as unknown[] | undefined) ?? []).map(Number).filter((x) => x > lo && x < hi);
  // Sorted and distinct whatever the estimate gives, so the ranges meet end to end from lo to hi.
  const points = [...new Set([lo, ...inside, hi])].sort((a, b) => a - b);
  return points.slice(1).map((to, i): [number, number] => [points[i]!, to]);
}
