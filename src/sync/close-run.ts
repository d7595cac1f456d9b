import type { DuckDBConnection } from '@duckdb/node-api';
import type { Reject } from '../normalize/reject.js';
import { failpoint } from '../util/failpoint.js';
import type { SyncError } from '../util/errors.js';
import { warehouseWriteError } from '../warehouse/warehouse-write-error.js';
import type { ExportRead } from './read-export.js';
import { asSyncError } from './run-errors.js';
import { memoryByTag, readMemoryLimit } from '../warehouse/memory-limit.js';
import type { Logger } from '../util/logger.js';
import { clearStaging, dropMergeTables, mergeStaging, prepareMerge } from '../warehouse/merge.js';
import { recordSeen } from '../warehouse/merge-seen.js';
import { mergeTime, systemClock, type Clock } from '../warehouse/merge-time.js';
import { flagQuality } from '../warehouse/quality-flags.js';
import { appendRejects, type QuarantineTarget } from '../warehouse/quarantine.js';
import { changedAny } from '../warehouse/run-counters.js';
import { finishRun, saveCounters, saveFacts } from '../warehouse/runs.js';
import { updateServingIndex } from '../warehouse/serving-index.js';
import { withThreads } from '../warehouse/threads.js';
import { dropRunStaging, withTransaction } from '../warehouse/transaction.js';
import type { AfterMergeContext } from './run-types.js';
import { checkStaged } from './run-errors.js';
import type { RunState } from './run-state.js';

/** The run {@link mergeRun} finishes: its id, source name, state, logger and clock. */
export interface MergedRun {
  runId: string;
  source: string;
  state: RunState;
  logger: Logger;
  /** Merge time source (default: the system clock; warehouse/merge-time.ts clamps it). */
  clock?: Clock | undefined;
  /** DuckDB threads for the merge (0: one per core; see warehouse/threads.ts). */
  mergeThreads: number;
  /** The source reads a full export (`ExportSource.fullExport`): its end is recorded for every report it saw. */
  fullExport: boolean;
  /** Staged reports per slice of the merge (merge.ts, `mergeSliceRows`). */
  sliceRows: number;
}

/**
 * The end of a run read to its end: {@link prepareMerge} (the batch, and the line hashes the run learnt),
 * then one transaction that merges its staging (merge.ts) at the merge time of `clock`, flags impossible
 * values on the versions it wrote (quality-flags.ts), runs `afterMerge` (tombstones, stats snapshot),
 * records what a full export saw (merge-seen.ts), applies what changed to the reader's serving index
 * (serving-index.ts), saves counters and facts and marks the run `succeeded`,
 * all or nothing; then its staging is cleared (merge.ts, `clearStaging`). The merge runs with
 * `mergeThreads` DuckDB threads.
 *
 * @throws SyncError `COUNT_MISMATCH` when staging does not hold the records counted as loaded; whatever
 *   `afterMerge` or DuckDB throws (the transaction is rolled back)
 */
export async function mergeRun(
  connection: DuckDBConnection,
  run: MergedRun,
  afterMerge: ((ctx: AfterMergeContext) => Promise<void>) | undefined,
): Promise<void> {
  await withThreads(connection, run.mergeThreads, () => mergeInTransaction(connection, run, afterMerge));
}

async function mergeInTransaction(
  connection: DuckDBConnection,
  run: MergedRun,
  afterMerge: ((ctx: AfterMergeContext) => Promise<void>) | undefined,
): Promise<void> {
  const { runId, state } = run;
  const counters = state.counters;
  // Milliseconds of each phase, logged once committed: where a large warehouse's merge spends its time.
  const phases: Record<string, number> = {};
  const timed = async <T>(phase: string, fn: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    try {
      return await fn();
    } finally {
      phases[phase] = Date.now() - started;
    }
  };
  const started = Date.now();
  let committing = 0;
  const { source, fullExport, sliceRows } = run;
  const prepared = await timed('prepareMs', () =>
    prepareMerge(connection, { runId, source, fullExport, sliceRows }),
  );
  await withTransaction(connection, async () => {
    const now = await mergeTime(connection, (run.clock ?? systemClock)(), run.logger);
    const merged = await timed('mergeMs', () =>
      mergeStaging(connection, { runId, source, now, fullExport, sliceRows }, prepared),
    );
    checkStaged(merged.staged, counters);
    const { duplicates, inserted, updated, unchanged, refined, revived } = merged;
    Object.assign(counters, { duplicates, inserted, updated, unchanged, refined, revived });
    // Impossible values are loaded, and flagged on the versions this run wrote.
    if (inserted + updated + revived > 0) {
      counters.qualityFlags = await timed('qualityMs', () => flagQuality(connection, { runId, now }));
      if (counters.qualityFlags > 0) {
        run.logger.warn(
          { qualityFlags: counters.qualityFlags },
          'data quality: impossible values loaded and flagged',
        );
      }
    }
    const context = { connection, runId, now, counters, seen: merged.unique, exportInfo: state.exportInfo };
    const { complete, incompleteReason, tombstonesBlocked } = state;
    await timed('afterMergeMs', async () =>
      afterMerge?.({ ...context, complete, incompleteReason, tombstonesBlocked }),
    );
    if (run.fullExport) {
      await timed('seenMs', () =>
        recordSeen(connection, { runId, now: now.toISOString(), seen: merged.unique }),
      );
    }
    if (changedAny(counters)) {
      await timed('servingMs', () => updateServingIndex(connection, { now, refined: counters.refined > 0 }));
    }
    await saveCounters(connection, runId, counters);
    await saveFacts(connection, runId, {
      attempts: state.attempts,
      complete: state.complete,
      outcome: changedAny(counters) ? 'changed' : 'unchanged',
      exportEtag: state.exportInfo?.etag ?? null,
      exportLastModified: state.exportInfo?.lastModified ?? null,
    });
    await dropMergeTables(connection);
    await finishRun(connection, runId, 'succeeded', undefined, now);
    await failpoint('in-merge');
    committing = Date.now();
  });
  phases.commitMs = Date.now() - committing;
  await timed('clearMs', () => clearStaging(connection, runId));
  run.logger.info({ ...phases, totalMs: Date.now() - started }, 'merge committed');
}

/**
 * Ends a run that failed (or was aborted): drops the batch not flushed and waits for a commit still running
 * (its rejects and those of a batch whose commit failed are stored with the run log, so `records_rejected`
 * matches them), then records the failure ({@link recordFailure}) and logs it. Returns the run's status and
 * error.
 *
 * @throws SyncError `WAREHOUSE_WRITE` (or the run's error) when the warehouse cannot take even the run
 *   log: the run stays `running` in the file and the next start closes it as aborted (closeStaleRuns)
 */
export async function failRun(
  run: ExportRead,
  status: 'failed' | 'aborted',
  err: unknown,
): Promise<{ status: 'failed' | 'aborted'; error: SyncError }> {
  const uncommitted = await run.staging.writer.close();
  const { config } = run;
  const error = asSyncError(err, {
    warehousePath: run.warehousePath,
    memoryLimit: config.duckdbMemoryLimit,
    readMemoryLimit: readMemoryLimit(config.duckdbReadMemoryLimit, config.maxRecordBytes),
    phase: run.state.phase,
  });
  if (error.code === 'WAREHOUSE_OUT_OF_MEMORY') {
    // Before anything is freed: which of DuckDB's uses filled its limit (a bug report needs it).
    run.logger.warn({ duckdbMemory: await memoryByTag(run.connection) }, 'DuckDB memory at the failure');
  }
  try {
    await recordFailure(run.connection, status, error, run.state, { ...run.target, rejects: uncommitted });
  } catch (recordErr) {
    run.logger.error({ err: error.toJSON() }, 'run failed and could not be recorded');
    throw warehouseWriteError(recordErr, run.warehousePath) ?? error;
  }
  // A stop that was asked for (a signal, a shutdown) is no error. `outcome` marks the run's last word,
  // which a one-shot command's summary prints (util/logger.ts leaves it out of its brief terminal lines).
  const entry = { err: error.toJSON(), ...run.state.counters, outcome: status };
  if (status === 'aborted') run.logger.warn(entry, 'run aborted');
  else run.logger.error(entry, 'run failed');
  return { status, error };
}

/**
 * Records a failed or aborted run: drops its staging, saves its counters and facts, finishes its run row
 * with `error`, and stores the rejects that were counted but never committed, in one transaction. When
 * even those rejects cannot be written (disk full?), the run log alone is written, counting only the
 * rejects that are stored.
 *
 * @throws what DuckDB throws when not even the run log can be written
 */
export async function recordFailure(
  connection: DuckDBConnection,
  status: 'failed' | 'aborted',
  error: SyncError,
  state: RunState,
  uncommitted: QuarantineTarget & { rejects: Reject[] },
): Promise<void> {
  try {
    await writeFailure(connection, status, error, state, uncommitted, uncommitted.rejects);
  } catch (err) {
    if (uncommitted.rejects.length === 0) throw err;
    state.counters.recordsRejected -= uncommitted.rejects.length;
    await writeFailure(connection, status, error, state, uncommitted, []);
  }
}

async function writeFailure(
  connection: DuckDBConnection,
  status: 'failed' | 'aborted',
  error: SyncError,
  state: RunState,
  target: QuarantineTarget,
  rejects: Reject[],
): Promise<void> {
  const runId = target.runId;
  await withTransaction(connection, async () => {
    await saveCounters(connection, runId, state.counters);
    await saveFacts(connection, runId, {
      attempts: state.attempts,
      complete: false,
      exportEtag: state.exportInfo?.etag ?? null,
      exportLastModified: state.exportInfo?.lastModified ?? null,
    });
    await finishRun(connection, runId, status, error.toJSON());
    await appendRejects(connection, target, rejects);
  });
  // Apart from the run log (like a succeeded run's, merge.ts `clearStaging`): a large staging deleted in
  // the same transaction could keep the failure from being recorded. What a crash leaves, the next start
  // removes (runs.ts, `closeStaleRuns`).
  await withTransaction(connection, () => dropRunStaging(connection, runId)).catch(() => undefined);
}
