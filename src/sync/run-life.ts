import { resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Config } from '../config/config.js';
import { isSyncError, SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { safeUrl } from '../util/safe-url.js';
import { readMemoryLimit } from '../warehouse/memory-limit.js';
import type { RunCounters } from '../warehouse/run-counters.js';
import { RunLog } from '../warehouse/runs.js';
import { warehouseWriteError } from '../warehouse/warehouse-write-error.js';
import { asSyncError } from './run-errors.js';
import { readingKey } from '../normalize/known-lines.js';

// The life cycle every run shares, an export run (run-sync.ts) and a stats snapshot
// (run-stats-snapshot.ts) alike: open its run log row, work, pass the point of no return, then commit
// with its row `succeeded`, or record the failure (`failed`, or `aborted` when stopped) and log it.

/** A run whose log row is open: the row, its logger (run id, job, source) and what it started with. */
export interface OpenedRun {
  log: RunLog;
  runId: string;
  logger: Logger;
  started: Date;
  /** The upstream's base URL without credentials, as the run row holds it (no trailing slash). */
  upstreamUrl: string | undefined;
  /** Absolute path of the warehouse file (for `WAREHOUSE_WRITE` errors). */
  warehousePath: string;
}

/**
 * Opens a run: its `sync_runs` row (status `running`, runs.ts) and a logger carrying its id, job and
 * source; logs `run started`.
 *
 * @throws SyncError `WAREHOUSE_WRITE` when the warehouse cannot take the run row
 */
export async function openRunLog(options: {
  connection: DuckDBConnection;
  config: Config;
  logger: Logger;
  job: string;
  source: string;
}): Promise<OpenedRun> {
  const { connection, config, job, source } = options;
  const started = new Date();
  const warehousePath = resolve(config.warehouse);
  // Credentials out; the form config gives it otherwise (no trailing slash), as resume compares it.
  const upstreamUrl = config.baseUrl === undefined ? undefined : safeUrl(config.baseUrl).replace(/\/$/, '');
  let log: RunLog;
  try {
    log = await RunLog.open(connection, {
      job,
      source,
      upstreamUrl,
      startedAt: started,
      reading: readingKey(),
    });
  } catch (err) {
    throw warehouseWriteError(err, warehousePath) ?? err;
  }
  const logger = options.logger.child({ runId: log.runId, job, source });
  logger.info('run started');
  return { log, runId: log.runId, logger, started, upstreamUrl, warehousePath };
}

/**
 * The last point where a signal stops the run (throws `RUN_ABORTED`: nothing committed, recorded
 * `aborted`); past it the finishing transaction runs to its commit, and `onCommit` says so in the same
 * tick (`records`: records to merge).
 */
export function pointOfNoReturn(
  run: {
    signal?: AbortSignal | undefined;
    onCommit?: ((runId: string, records: number) => void) | undefined;
  },
  runId: string,
  records: number,
): void {
  if (run.signal?.aborted) throw new SyncError('RUN_ABORTED', 'the run was stopped before its merge');
  run.onCommit?.(runId, records);
}

/**
 * What a run that threw ends as: `aborted` when its signal stopped it (or it threw `RUN_ABORTED`), else
 * `failed`; the error as a SyncError (run-errors.ts, `asSyncError`: disk full, DuckDB out of memory, …).
 */
export function runFailure(
  err: unknown,
  run: {
    signal?: AbortSignal | undefined;
    config: Config;
    warehousePath: string;
    phase?: 'reading' | 'merging';
  },
): { status: 'failed' | 'aborted'; error: SyncError } {
  const { config } = run;
  const aborted = run.signal?.aborted === true || isSyncError(err, 'RUN_ABORTED');
  const error = asSyncError(err, {
    warehousePath: run.warehousePath,
    memoryLimit: config.duckdbMemoryLimit,
    readMemoryLimit: readMemoryLimit(config.duckdbReadMemoryLimit, config.maxRecordBytes),
    phase: run.phase,
  });
  return { status: aborted ? 'aborted' : 'failed', error };
}

/**
 * Logs the end of a recorded failure. A stop that was asked for (a signal, a shutdown) is no error.
 * `outcome` marks the run's last word, which a one-shot command's summary prints (util/logger.ts leaves
 * it out of its brief terminal lines).
 */
export function logFailure(
  logger: Logger,
  failure: { status: 'failed' | 'aborted'; error: SyncError },
  counters: RunCounters,
): void {
  const entry = { err: failure.error.toJSON(), ...counters, outcome: failure.status };
  if (failure.status === 'aborted') logger.warn(entry, 'run aborted');
  else logger.error(entry, 'run failed');
}
