import { errorMessage, SyncError } from '../util/errors.js';
import type { RunCounters } from '../warehouse/run-counters.js';
import { outOfMemoryError, type MemoryLimits } from '../warehouse/out-of-memory-error.js';
import { warehouseWriteError } from '../warehouse/warehouse-write-error.js';

/**
 * No silent loss: every record read is either loaded or rejected. A mismatch is a bug in a decode stage,
 * and merging would hide it, so the run fails instead.
 *
 * @throws SyncError `COUNT_MISMATCH`
 */
export function checkAccounting(c: RunCounters): void {
  if (c.recordsRead === c.recordsLoaded + c.recordsRejected) return;
  throw new SyncError(
    'COUNT_MISMATCH',
    `${c.recordsRead} records read but ${c.recordsLoaded} loaded + ${c.recordsRejected} rejected: ` +
      `nothing merged (a bug: please report it with this run's id)`,
    { context: { read: c.recordsRead, loaded: c.recordsLoaded, rejected: c.recordsRejected } },
  );
}

/**
 * Staging must hold exactly the records counted as loaded (none lost or doubled by a restart).
 *
 * @throws SyncError `COUNT_MISMATCH`
 */
export function checkStaged(staged: number, c: RunCounters): void {
  if (staged === c.recordsLoaded) return;
  throw new SyncError(
    'COUNT_MISMATCH',
    `staging holds ${staged} records but ${c.recordsLoaded} were loaded: nothing merged (a bug: ` +
      `please report it with this run's id)`,
    { context: { staged, loaded: c.recordsLoaded } },
  );
}

/**
 * Fails a run whose rejected/read ratio is over the limit (docs/guarantees.md, default 5%).
 *
 * @throws SyncError `REJECT_RATIO`
 */
export function checkRejectRatio(c: RunCounters, max: number): void {
  if (c.recordsRead === 0) return;
  const ratio = c.recordsRejected / c.recordsRead;
  if (ratio > max) {
    throw new SyncError(
      'REJECT_RATIO',
      `${c.recordsRejected} of ${c.recordsRead} records rejected (${(ratio * 100).toFixed(1)}%), over the ` +
        `${(max * 100).toFixed(1)}% limit (REPORTS_MAX_REJECT_RATIO): nothing merged; see rejected_records`,
      { context: { rejected: c.recordsRejected, read: c.recordsRead, limit: max } },
    );
  }
}

/**
 * Any failure of a run as a SyncError: an abort as `RUN_ABORTED`, a full disk as `WAREHOUSE_WRITE`, DuckDB
 * out of memory as `WAREHOUSE_OUT_OF_MEMORY` (naming the setting to raise).
 */
export function asSyncError(err: unknown, limits: MemoryLimits): SyncError {
  if (err instanceof SyncError) return err;
  if (err instanceof Error && err.name === 'AbortError') return abortError();
  return (
    warehouseWriteError(err, limits.warehousePath) ??
    outOfMemoryError(err, limits) ??
    new SyncError('RUN_FAILED', errorMessage(err), { cause: err })
  );
}

/** The error of a run stopped by its AbortSignal. */
export function abortError(): SyncError {
  return new SyncError(
    'RUN_ABORTED',
    'the run was stopped before its merge (a signal or a shutdown): nothing of it was merged',
  );
}
