import type { Reject } from '../normalize/reject.js';
import type { SyncError } from '../util/errors.js';
import { memoryByTag } from '../warehouse/memory-limit.js';
import { appendRejects, type QuarantineTarget } from '../warehouse/quarantine.js';
import type { RunLog } from '../warehouse/runs.js';
import { dropRunStaging, withTransaction } from '../warehouse/transaction.js';
import { warehouseWriteError } from '../warehouse/warehouse-write-error.js';
import type { ExportRead } from './read-export.js';
import { logFailure, runFailure } from './run-life.js';
import type { RunState } from './run-state.js';

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
  err: unknown,
): Promise<{ status: 'failed' | 'aborted'; error: SyncError }> {
  const uncommitted = await run.staging.writer.close();
  const failure = runFailure(err, { ...run, phase: run.state.phase });
  if (failure.error.code === 'WAREHOUSE_OUT_OF_MEMORY') {
    // Before anything is freed: which of DuckDB's uses filled its limit (a bug report needs it).
    run.logger.warn({ duckdbMemory: await memoryByTag(run.connection) }, 'DuckDB memory at the failure');
  }
  try {
    await recordFailure(run.log, failure.status, failure.error, run.state, {
      ...run.target,
      rejects: uncommitted,
    });
  } catch (recordErr) {
    run.logger.error({ err: failure.error.toJSON() }, 'run failed and could not be recorded');
    throw warehouseWriteError(recordErr, run.warehousePath) ?? failure.error;
  }
  logFailure(run.logger, failure, run.state.counters);
  return failure;
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
  log: RunLog,
  status: 'failed' | 'aborted',
  error: SyncError,
  state: RunState,
  uncommitted: QuarantineTarget & { rejects: Reject[] },
): Promise<void> {
  try {
    await writeFailure(log, status, error, state, uncommitted, uncommitted.rejects);
  } catch (err) {
    if (uncommitted.rejects.length === 0) throw err;
    state.unstored(uncommitted.rejects.length);
    await writeFailure(log, status, error, state, uncommitted, []);
  }
}

async function writeFailure(
  log: RunLog,
  status: 'failed' | 'aborted',
  error: SyncError,
  state: RunState,
  target: QuarantineTarget,
  rejects: Reject[],
): Promise<void> {
  const connection = log.connection;
  await withTransaction(connection, async () => {
    await log.fail(status, error.toJSON(), state.counters, {
      attempts: state.attempts,
      complete: false,
      exportEtag: state.exportInfo?.etag ?? null,
      exportLastModified: state.exportInfo?.lastModified ?? null,
    });
    await appendRejects(connection, target, rejects);
  });
  // Apart from the run log (like a succeeded run's, merge.ts `clearStaging`): a large staging deleted in
  // the same transaction could keep the failure from being recorded. What a crash leaves, the next start
  // removes (stale-runs.ts, `closeStaleRuns`).
  await withTransaction(connection, () => dropRunStaging(connection, log.runId)).catch(() => undefined);
}
