import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { clearSpool, spoolDirFor } from '../normalize/batch-files.js';
import { safeUrl } from '../util/safe-url.js';
import { withRetry } from '../upstream/with-retry.js';
import { isSyncError, SyncError } from '../util/errors.js';
import { failpoint } from '../util/failpoint.js';
import { loadKnownLines } from '../warehouse/known-line-hashes.js';
import { mergeSliceRows } from '../warehouse/merge.js';
import { readMemoryLimit, withMemoryLimit } from '../warehouse/memory-limit.js';
import { newRunId, saveFacts, startRun } from '../warehouse/runs.js';
import { StagingWriter } from '../warehouse/staging.js';
import { warehouseWriteError } from '../warehouse/warehouse-write-error.js';
import { failRun, mergeRun } from './close-run.js';
import { finishNotModified, lastCompleteValidators } from './conditional.js';
import { readExport, type ExportRead } from './read-export.js';
import { checkAccounting, checkRejectRatio } from './run-errors.js';
import { RunState } from './run-state.js';
import type { RunSummary, RunSyncOptions } from './run-types.js';

export type {
  AfterMergeContext,
  BeforeMergeContext,
  Progress,
  RunSummary,
  RunSyncOptions,
} from './run-types.js';

/**
 * The one runner that wires extract → normalize → warehouse for any {@link ExportSource}: a `sync_runs` row
 * at start; the source's decoded blocks staged in batches (each batch a transaction with its checkpoint,
 * read-export.ts); on a retryable failure the export restarts from its beginning and the run's staging is
 * discarded; at the end one transaction merges, runs `afterMerge`, clears staging and finishes the run row
 * (close-run.ts). Rejected records are quarantined, never dropped; a run whose reject ratio passes
 * `maxRejectRatio` fails without merging. A paged source is committed only at page ends, and its first
 * attempt may resume an interrupted run of the same export (resume-run.ts).
 *
 * Never throws for a failed run: the failure is in the summary (`status`, `error`) and in `sync_runs`; a
 * warehouse write failure (disk full, read-only folder) is such a failure, coded `WAREHOUSE_WRITE`.
 * Throws (`WAREHOUSE_WRITE`) only when the warehouse cannot take even the failed run's record.
 */
export async function runSync(options: RunSyncOptions): Promise<RunSummary> {
  const run = await openRun(options);
  const { config, source, state, logger } = run;
  const summary = () => ({
    runId: run.runId,
    source: source.name,
    counters: state.counters,
    durationMs: Date.now() - run.started.getTime(),
    attempts: state.attempts,
    exportInfo: state.exportInfo,
  });
  try {
    // Reading only appends to staging: a lower DuckDB memory limit keeps its cache of written blocks small.
    const readLimit = readMemoryLimit(config.duckdbReadMemoryLimit, config.maxRecordBytes);
    await withMemoryLimit(run.connection, readLimit, () =>
      withRetry(`${source.name} export`, config, logger, (n) => readExport(run, n), options.signal),
    );
    if (state.notModified) {
      pointOfNoReturn(options, run.runId, 0);
      const { counters, attempts, exportInfo } = state;
      await finishNotModified(run.connection, {
        runId: run.runId,
        now: new Date(),
        counters,
        attempts,
        exportInfo,
        logger,
      });
      logger.info(
        { durationMs: summary().durationMs, outcome: 'succeeded' },
        'run succeeded: the export is not modified (304)',
      );
      return { ...summary(), status: 'succeeded', notModified: true };
    }
    checkAccounting(state.counters);
    checkRejectRatio(state.counters, config.maxRejectRatio);
    await options.beforeMerge?.({
      runId: run.runId,
      counters: state.counters,
      exportInfo: state.exportInfo,
      complete: state.complete,
      incompleteReason: state.incompleteReason,
      tombstonesBlocked: state.tombstonesBlocked,
    });
    pointOfNoReturn(options, run.runId, state.counters.recordsLoaded);
    await failpoint('before-merge');
    state.phase = 'merging';
    const mergeRunOf = {
      ...run,
      source: source.name,
      clock: options.clock,
      mergeThreads: config.duckdbMergeThreads,
      fullExport: source.fullExport,
      sliceRows: mergeSliceRows(config.mergeSliceRows, config.duckdbMemoryLimit),
    };
    await mergeRun(run.connection, mergeRunOf, options.afterMerge);
    await failpoint('after-commit');
    logger.info(
      { ...state.counters, durationMs: summary().durationMs, outcome: 'succeeded' },
      'run succeeded',
    );
    const incomplete = state.complete ? {} : { incompleteReason: state.incompleteReason ?? 'stopped early' };
    return { ...summary(), status: 'succeeded', ...incomplete };
  } catch (err) {
    const aborted = options.signal?.aborted === true || isSyncError(err, 'RUN_ABORTED');
    const failure = await failRun(run, aborted ? 'aborted' : 'failed', err);
    return { ...summary(), ...failure };
  }
}

/**
 * The last point where a signal stops the run (throws `RUN_ABORTED`: nothing merged, recorded `aborted`);
 * past it the finishing transaction runs to its commit, and `onCommit` says so in the same tick.
 */
function pointOfNoReturn(options: RunSyncOptions, runId: string, records: number): void {
  if (options.signal?.aborted) throw new SyncError('RUN_ABORTED', 'the run was stopped before its merge');
  options.onCommit?.(runId, records);
}

/**
 * Starts a run: its `sync_runs` row, a clean spool folder, the known-line hashes, and what reading its
 * export needs ({@link ExportRead}).
 *
 * @throws SyncError `WAREHOUSE_WRITE` when the warehouse cannot take the run row
 */
async function openRun(options: RunSyncOptions): Promise<ExportRead & { started: Date }> {
  const { connection, config, source } = options;
  const started = new Date();
  const runId = newRunId(source.name, started);
  const job = options.job ?? `sync-${source.name}`;
  const logger = options.logger.child({ runId, job, source: source.name });
  const warehousePath = resolve(config.warehouse);
  // Credentials out; the form config gives it otherwise (no trailing slash), as resume compares it.
  const upstreamUrl = config.baseUrl === undefined ? undefined : safeUrl(config.baseUrl).replace(/\/$/, '');
  try {
    await startRun(connection, { runId, job, source: source.name, upstreamUrl, startedAt: started });
  } catch (err) {
    throw warehouseWriteError(err, warehousePath) ?? err;
  }
  logger.info('run started');
  if (source.paging) await saveFacts(connection, runId, { pageSize: source.paging.pageSize(config) });
  const spoolDir = spoolDirFor(config.warehouse === ':memory:' ? ':memory:' : warehousePath, tmpdir());
  clearSpool(spoolDir);
  const target = { runId, source: source.name, rawMaxBytes: config.rejectRawMaxBytes, spoolDir };
  const state = new RunState();
  // A full export asks conditionally with the validators of the last complete run of it (a 304 ends the run).
  const validators =
    config.conditionalExports && source.fullExport
      ? await lastCompleteValidators(connection, source.name, upstreamUrl)
      : undefined;
  return {
    ...options,
    started,
    runId,
    logger,
    upstreamUrl,
    warehousePath,
    target,
    state,
    // Lines a current report came from are skipped before parsing; loaded once per run, within the reading
    // limit (DuckDB keeps the blocks it scanned cached up to its limit).
    knownLines:
      source.lineHashes === false
        ? undefined
        : await withMemoryLimit(
            connection,
            readMemoryLimit(config.duckdbReadMemoryLimit, config.maxRecordBytes),
            () => loadKnownLines(connection, source.name),
          ),
    validators,
    staging: { writer: new StagingWriter(connection, target) },
    progress: () =>
      options.onProgress?.({
        runId,
        source: source.name,
        counters: state.counters,
        elapsedMs: Date.now() - started.getTime(),
        page: state.page,
      }),
  };
}
