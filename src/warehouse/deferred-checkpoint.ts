import type { DuckDBConnection } from '@duckdb/node-api';
import { withVacuum } from './vacuum-policy.js';

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
 * does any committed transaction. The closing `CHECKPOINT` follows only an `fn` that resolved, and is best
 * effort: when another connection's transaction keeps it from running, the next commit past the threshold
 * checkpoints. After a failure none is tried: a checkpoint that fails on a full disk invalidates the
 * DuckDB instance, and the caller still has to record its failure there.
 *
 * @param beforeCheckpoint runs between `fn` and the checkpoint (e.g. evicting DuckDB's cache, so that the
 *   checkpoint's own memory does not come on top of it); its failure is ignored
 * @throws what `fn` throws (the threshold is restored first)
 */
export async function withCheckpointsDeferred<T>(
  c: DuckDBConnection,
  fn: () => Promise<T>,
  beforeCheckpoint?: () => Promise<void>,
): Promise<T> {
  const before = (
    await c.runAndReadAll(`SELECT current_setting('checkpoint_threshold')::VARCHAR`)
  ).getRows()[0]![0] as string;
  await c.run(`SET checkpoint_threshold = '${NEVER}'`);
  let result: T;
  try {
    result = await fn();
  } finally {
    await c.run(`SET checkpoint_threshold = '${before.replace(/'/g, "''")}'`);
  }
  await beforeCheckpoint?.().catch(() => undefined);
  await c.run('CHECKPOINT').catch(() => undefined);
  return result;
}

/**
 * Runs `fn`, a sync's reading (it appends the run's staging in batches, each its own transaction), with
 * DuckDB's checkpoint vacuum off (`max_vacuum_tasks` 0), checkpoints what it wrote still without vacuum,
 * then restores the setting.
 *
 * Why: a checkpoint vacuums the row groups it writes, merging neighbours whose rows fit in fewer (DuckDB
 * docs, "CHECKPOINT Statement"). Staging batches end in part-filled row groups, so whichever checkpoint first
 * met them rewrote the whole staging: a first load of 4M reports spent 11–26 s in its merge's commit and
 * left a 1.58 GB file where 1.07 GB held the same rows (measured), for rows deleted right after the merge.
 * The warehouse's own tables keep the vacuum: the merge's commit runs after the setting is back.
 *
 * The closing `CHECKPOINT` is best effort (DuckDB refuses it while another connection's transaction runs); the
 * merge's commit then checkpoints the staging, vacuum and all, as before. It is skipped when `worthIt` says
 * so: a checkpoint that fails on a full disk invalidates the DuckDB instance, so the run could not record
 * its failure, while a small staging costs its merge's commit little to rewrite.
 *
 * @param worthIt asked once `fn` resolved: checkpoint the staging now (default: yes)
 * @throws what `fn` throws (the setting restored first, when DuckDB still takes it), or DuckDB's error when
 *   the setting cannot be read
 */
export async function withoutStagingVacuum<T>(
  c: DuckDBConnection,
  fn: () => Promise<T>,
  worthIt: () => boolean = () => true,
): Promise<T> {
  return withVacuum(c, false, async () => {
    const result = await fn();
    if (worthIt()) await c.run('CHECKPOINT').catch(() => undefined);
    return result;
  });
}
