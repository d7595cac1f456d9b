import type { DuckDBConnection } from '@duckdb/node-api';
import type { Reject } from '../normalize/reject.js';
import { failpoint } from '../util/failpoint.js';
import type { SyncError } from '../util/errors.js';
import { warehouseWriteError } from '../warehouse/warehouse-write-error.js';
import type { ExportRead } from './read-export.js';
import { asSyncError } from './run-errors.js';
import type { Logger } from '../util/logger.js';
import { clearStaging, mergeStaging } from '../warehouse/merge.js';
import { mergeTime, systemClock, type Clock } from '../warehouse/merge-time.js';
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
}

/**
 * The final transaction of a run read to its end: merges its staging (merge.ts) at the merge time of
 * `clock`, runs `afterMerge` (tombstones, stats snapshot), applies what changed to the reader's serving
 * index (serving-index.ts), saves counters and facts, clears staging and marks the run `succeeded`, all or
 * nothing. The merge runs with `mergeThreads` DuckDB threads.
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
  await withTransaction(connection, async () => {
    const now = await mergeTime(connection, (run.clock ?? systemClock)(), run.logger);
    const merged = await mergeStaging(connection, { runId, source: run.source, now });
    checkStaged(merged.staged, counters);
    Object.assign(counters, {
      duplicates: merged.duplicates,
      inserted: merged.inserted,
      updated: merged.updated,
      unchanged: merged.unchanged,
      refined: merged.refined,
      revived: merged.revived,
    });
    await afterMerge?.({
      connection,
      runId,
      now,
      counters,
      seen: merged.unique,
      exportInfo: state.exportInfo,
      complete: state.complete,
      incompleteReason: state.incompleteReason,
      tombstonesBlocked: state.tombstonesBlocked,
    });
    if (changedAny(counters)) await updateServingIndex(connection, { now, refined: counters.refined > 0 });
    await saveCounters(connection, runId, counters);
    await saveFacts(connection, runId, {
      attempts: state.attempts,
      complete: state.complete,
      outcome: changedAny(counters) ? 'changed' : 'unchanged',
      exportEtag: state.exportInfo?.etag ?? null,
      exportLastModified: state.exportInfo?.lastModified ?? null,
    });
    await clearStaging(connection, runId);
    await finishRun(connection, runId, 'succeeded', undefined, now);
    await failpoint('in-merge');
  });
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
  const error = asSyncError(err, run.warehousePath);
  try {
    await recordFailure(run.connection, status, error, run.state, { ...run.target, rejects: uncommitted });
  } catch (recordErr) {
    run.logger.error({ err: error.toJSON() }, 'run failed and could not be recorded');
    throw warehouseWriteError(recordErr, run.warehousePath) ?? error;
  }
  run.logger.error(
    { err: error.toJSON(), ...run.state.counters },
    status === 'aborted' ? 'run aborted' : 'run failed',
  );
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
    await dropRunStaging(connection, runId);
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
}
