import type { DuckDBConnection } from '@duckdb/node-api';

/** A `checkpoint_threshold` no run's write-ahead log reaches. */
const NEVER = '1000GiB';

/**
 * Runs `fn`, whose statements each commit on their own, with DuckDB's automatic checkpoints held back,
 * then checkpoints once. DuckDB checkpoints at a commit once the write-ahead log passes
 * `checkpoint_threshold` (16 MiB by default; DuckDB docs, "Configuration"): the merge's ten 1M-row
 * `UPDATE`s of the line-hash column on a 10M-report warehouse checkpointed every other slice, and each of
 * those checkpoints took the process 100–130 MiB higher than the same updates with one checkpoint at the
 * end (peak RSS of the phase 818–849 against 719–752 MiB, the same time; docs/performance.md, "Scale").
 *
 * Meanwhile the log holds the updates (~16 MiB per 1M hashes); a crash replays it at the next open, as it
 * does any committed transaction. The closing `CHECKPOINT` is best effort: when another connection's
 * transaction keeps it from running, the next commit past the threshold checkpoints.
 *
 * @throws what `fn` throws (the threshold is restored first)
 */
export async function withCheckpointsDeferred<T>(c: DuckDBConnection, fn: () => Promise<T>): Promise<T> {
  const before = (
    await c.runAndReadAll(`SELECT current_setting('checkpoint_threshold')::VARCHAR`)
  ).getRows()[0]![0] as string;
  await c.run(`SET checkpoint_threshold = '${NEVER}'`);
  try {
    return await fn();
  } finally {
    await c.run(`SET checkpoint_threshold = '${before.replace(/'/g, "''")}'`);
    await c.run('CHECKPOINT').catch(() => undefined);
  }
}
