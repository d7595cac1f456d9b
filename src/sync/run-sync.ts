import { setUpstreamReading } from '../schema/upstream-reading.js';
import { extraLimits, upstreamReadingOf } from '../config/config.js';
import { tmpdir } from 'node:os';
import type { KnownLines } from '../normalize/known-lines.js';
import type { ExportValidator } from './export-source.js';
import { withRetry } from '../upstream/with-retry.js';
import { failpoint } from '../util/failpoint.js';
import { clearSpool, spoolDirFor } from '../warehouse/batch-files.js';
import { loadKnownLines } from '../warehouse/known-line-hashes.js';
import { deleteMarkerBytes } from '../warehouse/delete-markers.js';
import { mergeSliceRows } from '../warehouse/merge.js';
import { withoutStagingVacuum } from '../warehouse/deferred-checkpoint.js';
import { readMemoryLimit, withMemoryLimit } from '../warehouse/memory-limit.js';
import { sortLeftBehind } from './sort-left-behind.js';
import { StagingWriter } from '../warehouse/staging.js';
import { mergeRun } from './close-run.js';
import { failRun } from './fail-run.js';
import { finishNotModified, lastCompleteValidators } from './conditional.js';
import { readExport, type ExportRead } from './read-export.js';
import { checkAccounting, checkRejectRatio } from './run-errors.js';
import { openRunLog, pointOfNoReturn } from './run-life.js';
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
 * (close-run.ts; a failure is recorded by fail-run.ts). Rejected records are quarantined, never dropped;
 * a run whose reject ratio passes `maxRejectRatio` fails without merging. A paged source is committed only
 * at page ends, and its first attempt may resume an interrupted run of the same export (resume-run.ts).
 *
 * Never throws for a failed run: the failure is in the summary (`status`, `error`) and in `sync_runs`; a
 * warehouse write failure (disk full, read-only folder) is such a failure, coded `WAREHOUSE_WRITE`.
 * Throws (`WAREHOUSE_WRITE`) only when the warehouse cannot take even the failed run's record.
 */
export async function runSync(options: RunSyncOptions): Promise<RunSummary> {
  // The upstream's field names and time zone: read by every validation of this run, here and in its workers.
  setUpstreamReading(upstreamReadingOf(options.config));
  const run = await openRun(options);
  try {
    // Inside the try: once the run row exists, a failure here (DuckDB out of memory loading the known
    // lines, say) is recorded on it like any other.
    run.validators = await validatorsOf(options, run.upstreamUrl);
    run.knownLines = await knownLinesOf(options);
    // Reading only appends to staging: a lower DuckDB memory limit keeps its cache of written blocks small.
    const { config, source, logger } = run;
    const readLimit = readMemoryLimit(config.duckdbReadMemoryLimit, config.maxRecordBytes);
    let alone = false;
    await withoutStagingVacuum(
      run.connection,
      () =>
        withMemoryLimit(run.connection, readLimit, (lowered) => {
          alone = lowered;
          return withRetry(
            `${source.name} export`,
            config,
            logger,
            (n) => readExport(run, n),
            options.signal,
          );
        }),
      () => run.state.counters.recordsRead >= STAGING_CHECKPOINT_MIN_RECORDS,
    );
    let summary: RunSummary;
    if (run.state.notModified) summary = await commitNotModified(run);
    else {
      await checkBeforeMerge(run, options);
      summary = await commitMerge(run, options, alone ? options.evictCache : undefined);
    }
    await sortLeftBehind(run.connection, config, logger, options.signal);
    return summary;
  } catch (err) {
    const failure = await failRun(run, err);
    return { ...summaryOf(run), ...failure };
  }
}

type OpenedExportRun = ExportRead & { started: Date };

/**
 * Lines read from which a run checkpoints its staging before merging (`withoutStagingVacuum`): a first 4M
 * load's merge commit spent 11–26 s rewriting the staging; below ~1M lines that rewrite is small, and the
 * checkpoint is one more write that a full disk turns into a failure the run cannot record.
 */
const STAGING_CHECKPOINT_MIN_RECORDS = 1_000_000;

/** The summary of a run as it stands (its status and what it adds are the caller's). */
function summaryOf(run: OpenedExportRun): Omit<RunSummary, 'status'> {
  const { state } = run;
  return {
    runId: run.runId,
    source: run.source.name,
    counters: state.counters,
    durationMs: Date.now() - run.started.getTime(),
    attempts: state.attempts,
    exportInfo: state.exportInfo,
  };
}

/** Ends a run whose export answered 304: nothing to merge (conditional.ts). */
async function commitNotModified(run: OpenedExportRun): Promise<RunSummary> {
  const { state, logger } = run;
  pointOfNoReturn(run, run.runId, 0);
  const { counters, attempts, exportInfo } = state;
  await finishNotModified(run.log, { now: new Date(), counters, attempts, exportInfo, logger });
  const summary = summaryOf(run);
  logger.info(
    { durationMs: summary.durationMs, outcome: 'succeeded' },
    'run succeeded: the export is not modified (304)',
  );
  return { ...summary, status: 'succeeded', notModified: true };
}

/**
 * What must hold before a merge: the accounting (run-errors.ts), the reject ratio, and the caller's
 * `beforeMerge` hook (which may throw).
 */
async function checkBeforeMerge(run: OpenedExportRun, options: RunSyncOptions): Promise<void> {
  const { state } = run;
  checkAccounting(state.counters);
  checkRejectRatio(state.counters, run.config.maxRejectRatio);
  await options.beforeMerge?.({
    runId: run.runId,
    counters: state.counters,
    exportInfo: state.exportInfo,
    complete: state.complete,
    incompleteReason: state.incompleteReason,
    tombstonesBlocked: state.tombstonesBlocked,
  });
}

/**
 * The merge's slice size (merge.ts, `mergeSliceRows`). The delete markers DuckDB holds for `report_rows`
 * are read (a scan of its row ids, ~0.1–0.2 s at 4M–10M reports) only when they can change it: an automatic
 * size, and a full export (its unseen reports are found in slices over every report) or more staged
 * reports than one slice at the whole limit.
 *
 * @throws DuckDB's error when `report_rows` cannot be read
 */
async function sliceRowsFor(run: OpenedExportRun): Promise<number> {
  const { config, source, state, logger } = run;
  const whole = mergeSliceRows(config.mergeSliceRows, config.duckdbMemoryLimit);
  if (config.mergeSliceRows > 0 || (!source.fullExport && state.counters.recordsLoaded <= whole))
    return whole;
  const markerBytes = await deleteMarkerBytes(run.connection);
  const sliceRows = mergeSliceRows(0, config.duckdbMemoryLimit, markerBytes);
  logger.debug({ sliceRows, deleteMarkerMiB: Math.round(markerBytes / 2 ** 20) }, 'merge slice size');
  return sliceRows;
}

/**
 * Merges the run in its finishing transaction (close-run.ts) and returns its summary. `evictCache`: given
 * only when the run has the instance to itself (its reading could lower the memory limit).
 */
async function commitMerge(
  run: OpenedExportRun,
  options: RunSyncOptions,
  evictCache: RunSyncOptions['evictCache'],
): Promise<RunSummary> {
  const { state, config, source, logger } = run;
  const sliceRows = await sliceRowsFor(run);
  pointOfNoReturn(run, run.runId, state.counters.recordsLoaded);
  await failpoint('before-merge');
  state.phase = 'merging';
  await mergeRun(
    run.connection,
    {
      ...run,
      source: source.name,
      clock: options.clock,
      mergeThreads: config.duckdbMergeThreads,
      fullExport: source.fullExport,
      sliceRows,
      evictCache,
      releaseKnownLines: () => {
        run.knownLines = undefined;
      },
    },
    options.afterMerge,
  );
  await failpoint('after-commit');
  const summary = summaryOf(run);
  logger.info({ ...state.counters, durationMs: summary.durationMs, outcome: 'succeeded' }, 'run succeeded');
  const incomplete = state.complete ? {} : { incompleteReason: state.incompleteReason ?? 'stopped early' };
  return { ...summary, status: 'succeeded', ...incomplete };
}

/**
 * Starts a run: its `sync_runs` row (run-life.ts), a clean spool folder, and what reading its export needs
 * ({@link ExportRead}); its validators and known-line hashes are loaded by `runSync`, where a failure is
 * recorded on the row.
 *
 * @throws SyncError `WAREHOUSE_WRITE` when the warehouse cannot take the run row
 */
async function openRun(options: RunSyncOptions): Promise<OpenedExportRun> {
  const { connection, config, source } = options;
  const opened = await openRunLog({
    ...options,
    job: options.job ?? `sync-${source.name}`,
    source: source.name,
  });
  const { log, runId, started, warehousePath } = opened;
  if (source.paging) await log.note({ pageSize: source.paging.pageSize(config) });
  const spoolDir = spoolDirFor(config.warehouse === ':memory:' ? ':memory:' : warehousePath, tmpdir());
  clearSpool(spoolDir);
  const state = new RunState();
  const target = {
    runId,
    source: source.name,
    rawMaxBytes: config.rejectRawMaxBytes,
    spoolDir,
    log,
    onRefused: (records: number) => state.refused(records),
  };
  return {
    ...options,
    ...opened,
    target,
    state,
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

/** A full export asks conditionally with the validators of the last complete run of it (a 304 ends the run). */
async function validatorsOf(
  options: RunSyncOptions,
  upstreamUrl: string | undefined,
): Promise<ExportValidator | undefined> {
  const { connection, config, source } = options;
  return config.conditionalExports && source.fullExport
    ? lastCompleteValidators(connection, source.name, upstreamUrl)
    : undefined;
}

/**
 * Lines a current report came from are skipped before parsing; loaded once per run, within the reading
 * limit. DuckDB would keep the blocks it scanned cached next to the set through the whole reading (~215 MiB
 * at 10M reports), although nothing reads them again: they are evicted slice by slice, when the sync has
 * the instance to itself (the limit was lowered).
 */
async function knownLinesOf(options: RunSyncOptions): Promise<KnownLines | undefined> {
  const { connection, config, source } = options;
  if (source.lineHashes === false) return undefined;
  const limit = readMemoryLimit(config.duckdbReadMemoryLimit, config.maxRecordBytes);
  // A paged export can be resumed: the known lines of the pages a resume adopts are in staging, not marks.
  const trackSeen = source.paging === undefined;
  return withMemoryLimit(connection, limit, (alone) =>
    loadKnownLines(
      connection,
      source.name,
      trackSeen,
      alone ? options.evictCache : undefined,
      extraLimits(config),
    ),
  );
}
