import type { DuckDBConnection } from '@duckdb/node-api';

/** The last successful run of any job, as `sync_runs` records it. */
export interface LastSuccess {
  runId: string;
  job: string;
  /** When the run committed, epoch ms. */
  finishedMs: number;
}

/**
 * The most recently finished `succeeded` row of `sync_runs` (DESIGN.md §6, the run log), or `null` when no
 * run has succeeded yet. Every change of the `reports` table commits together with such a row, so this
 * identifies the data state the reader serves (DESIGN.md §7: validators from the last successful run).
 */
export async function lastSuccess(connection: DuckDBConnection): Promise<LastSuccess | null> {
  // arg_max over one scan is about twice as fast as ORDER BY … LIMIT 1; it runs once per request.
  const reader = await connection.runAndReadAll(
    `SELECT arg_max([run_id, job, epoch_ms(finished_at)::VARCHAR], (finished_at, run_id))
     FROM sync_runs WHERE status = 'succeeded' AND finished_at IS NOT NULL`,
  );
  const row = reader.getRowsJS()[0]?.[0] as string[] | null | undefined;
  if (row === null || row === undefined) return null;
  return { runId: String(row[0]), job: String(row[1]), finishedMs: Number(row[2]) };
}
