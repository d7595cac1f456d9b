import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Dispatcher } from 'undici';
import { extraLimits, type Config } from '../config/config.js';
import { canonicalJson, contentHash } from '../schema/report.js';
import { safeUrl } from '../upstream/safe-url.js';
import { withRetry } from '../upstream/with-retry.js';
import { errorMessage, isSyncError, SyncError } from '../util/errors.js';
import { failpoint } from '../util/failpoint.js';
import type { Logger } from '../util/logger.js';
import { clearStaging, mergeStaging } from '../warehouse/merge.js';
import { emptyCounters, type RunCounters } from '../warehouse/run-counters.js';
import { finishRun, newRunId, saveCounters, saveFacts, startRun, type RunStatus } from '../warehouse/runs.js';
import { appendRejects, clearSpool, spoolDirFor, StagingWriter, type Reject } from '../warehouse/staging.js';
import { warehouseWriteError } from '../warehouse/warehouse-write-error.js';
import { recordIdOf } from '../extract/record.js';
import type { ExportInfo, ExportSource, ReadContext } from './export-source.js';
import { KnownLines } from './known-lines.js';
import { mergeTime, systemClock, type Clock } from '../warehouse/merge-time.js';
import { prepareResume } from './resume-run.js';
import type { DriftEvent } from '../warehouse/drift.js';
import { conditionalHeaders, finishNotModified, lastCompleteValidators } from './conditional.js';

/** Figures a long run reports while it goes (see `onProgress`). */
export interface Progress {
  runId: string;
  source: string;
  counters: Readonly<RunCounters>;
  /** Milliseconds since the run started. */
  elapsedMs: number;
  /** Current page of a paged export. */
  page?: number | undefined;
}

/** Options of {@link runSync}. */
export interface RunSyncOptions {
  connection: DuckDBConnection;
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  source: ExportSource;
  /** Job name for `sync_runs.job` (defaults to `sync-<source>`). */
  job?: string;
  /** Aborting stops the run between records; it is recorded as `aborted` and nothing is merged. */
  signal?: AbortSignal;
  /**
   * Called after each batch is handed to its background commit (and at the end): the counters include it
   * before its commit is done.
   */
  onProgress?: (p: Progress) => void;
  /**
   * Hook run once the export is read and before the final transaction opens (network calls belong here,
   * not inside the transaction: e.g. fetching `/stats` for the tombstone guard). A throw fails the run.
   */
  beforeMerge?: (ctx: BeforeMergeContext) => Promise<void>;
  /** Hook run inside the final transaction, after the merge (tombstones, stats snapshot). */
  afterMerge?: (ctx: AfterMergeContext) => Promise<void>;
  /** Given to the source as `ReadContext.upstreamTotal` (the `/stats` total, fetched once). */
  upstreamTotal?: () => Promise<number | undefined>;
  /** The clock of the merge time (default: the system clock; tests inject one that goes backwards). */
  clock?: Clock | undefined;
}

/** What {@link RunSyncOptions.beforeMerge} gets: the run as read, nothing merged yet. */
export interface BeforeMergeContext {
  runId: string;
  counters: RunCounters;
  exportInfo: ExportInfo | undefined;
  /** The export was read to its end (see {@link AfterMergeContext.complete}). */
  complete: boolean;
  incompleteReason: string | undefined;
  tombstonesBlocked: string | undefined;
}

/** What {@link RunSyncOptions.afterMerge} gets: the open transaction's connection and the run so far. */
export interface AfterMergeContext {
  connection: DuckDBConnection;
  runId: string;
  now: Date;
  counters: RunCounters;
  exportInfo: ExportInfo | undefined;
  /** The export was read to its end: false when the source stopped early (`ReadContext.markIncomplete`). */
  complete: boolean;
  /** Why the export is incomplete, when it is. */
  incompleteReason: string | undefined;
  /** Why the export, though complete, cannot be proven consistent (`ReadContext.blockTombstones`). */
  tombstonesBlocked: string | undefined;
}

/** The outcome of a run, as the CLI prints it and `sync_runs` stores it. */
export interface RunSummary {
  runId: string;
  source: string;
  status: RunStatus;
  counters: RunCounters;
  durationMs: number;
  attempts: number;
  exportInfo?: ExportInfo | undefined;
  error?: SyncError | undefined;
  /** The export answered 304 to the run's conditional request: nothing was read or merged. */
  notModified?: boolean | undefined;
  /** Schema drift the run saw (warehouse/drift.ts), when its source checks for it. */
  drift?: readonly DriftEvent[] | undefined;
}

/** True when a run inserted, updated, revived or removed a report (what makes a publish worth it). */
export function changedAny(c: RunCounters): boolean {
  return c.inserted + c.updated + c.revived + c.removed > 0;
}

/**
 * The one runner that wires extract → validate → load for any {@link ExportSource} (STYLE.md §dlt):
 * a `sync_runs` row at start; records streamed, validated with zod and staged in batches (each batch a
 * transaction with its checkpoint); on a retryable failure the export restarts from its beginning and
 * the run's staging is discarded; at the end one transaction merges, runs `afterMerge`, clears staging
 * and finishes the run row. Rejected records are quarantined, never dropped; a run whose reject ratio
 * passes `maxRejectRatio` fails without merging.
 *
 * A paged source (`source.paging`, the CSV export) is committed only at its checkpoints (page ends), once a
 * batch of records (`REPORTS_BATCH_SIZE`) has gathered, in whole pages; its first attempt may resume an
 * interrupted run of the same export after the last committed page (resume-run.ts).
 *
 * Never throws for a failed run: the failure is in the summary (`status`, `error`) and in `sync_runs`; a
 * warehouse write failure (disk full, read-only folder) is such a failure, coded `WAREHOUSE_WRITE`.
 * Throws (`WAREHOUSE_WRITE`) only when the warehouse cannot take even the failed run's record.
 */
export async function runSync(options: RunSyncOptions): Promise<RunSummary> {
  const { connection, config, source } = options;
  const started = new Date();
  const runId = newRunId(source.name, started);
  const logger = options.logger.child({
    runId,
    job: options.job ?? `sync-${source.name}`,
    source: source.name,
  });
  // Credentials out; the form config gives it otherwise (no trailing slash), as resume compares it.
  const upstreamUrl = config.baseUrl === undefined ? undefined : safeUrl(config.baseUrl).replace(/\/$/, '');
  try {
    await startRun(connection, {
      runId,
      job: options.job ?? `sync-${source.name}`,
      source: source.name,
      upstreamUrl,
      startedAt: started,
    });
  } catch (err) {
    throw warehouseWriteError(err, resolve(config.warehouse)) ?? err;
  }
  logger.info('run started');
  if (source.paging) await saveFacts(connection, runId, { pageSize: source.paging.pageSize(config) });

  let counters = emptyCounters();
  let exportInfo: ExportInfo | undefined;
  let exportInfoSaved = false;
  let incompleteReason: string | undefined;
  let tombstonesBlocked: string | undefined;
  let notModified = false;
  let attempts = 0;
  // A full export asks conditionally with the validators of the last complete run of it (a 304 ends the run).
  const validators =
    config.conditionalExports && source.fullExport
      ? await lastCompleteValidators(connection, source.name, upstreamUrl)
      : undefined;
  const spoolDir = spoolDirFor(
    config.warehouse === ':memory:' ? ':memory:' : resolve(config.warehouse),
    tmpdir(),
  );
  clearSpool(spoolDir);
  const target = { runId, source: source.name, rawMaxBytes: config.rejectRawMaxBytes, spoolDir };
  let writer = new StagingWriter(connection, target);
  // Lines a current report came from are skipped before parsing; loaded once per run.
  const knownLines = source.lineHashes === false ? undefined : await KnownLines.load(connection, source.name);
  let page: number | undefined;
  const limits = extraLimits(config);
  // Commits a batch; the export's validator goes to sync_runs before the first one, so an interrupted
  // run can be resumed only against the same export version.
  const flush = async (checkpoint: { page?: number | undefined; nextUrl?: string | undefined }) => {
    if (exportInfo && !exportInfoSaved) {
      await writer.drain(); // the connection is the background commit's until it is done
      await saveFacts(connection, runId, {
        exportEtag: exportInfo.etag ?? null,
        exportLastModified: exportInfo.lastModified ?? null,
      });
      exportInfoSaved = true;
    }
    await writer.flush(counters, checkpoint);
  };
  const progress = () =>
    options.onProgress?.({
      runId,
      source: source.name,
      counters,
      elapsedMs: Date.now() - started.getTime(),
      page,
    });

  const readAll = async (attempt: number) => {
    attempts = attempt;
    incompleteReason = undefined;
    tombstonesBlocked = undefined;
    notModified = false;
    page = undefined;
    if (attempt > 1) {
      // A broken body restarts the export from its start: never splice attempts together (DESIGN.md §4).
      await writer.discard();
      writer = new StagingWriter(connection, target);
      counters = emptyCounters();
      exportInfo = undefined;
      exportInfoSaved = false;
      if (source.paging) await saveFacts(connection, runId, { resumedFromRun: null, resumedAtPage: null });
    }
    const ctx: ReadContext = {
      config,
      dispatcher: options.dispatcher,
      logger,
      signal: options.signal,
      addBytes: (n: number) => {
        counters.bytesRead += n;
      },
      addWireBytes: (n: number) => {
        counters.bytesWire += n;
      },
      setExportInfo: (info: ExportInfo) => {
        exportInfo = info;
      },
      markIncomplete: (reason: string) => {
        incompleteReason = reason;
      },
      blockTombstones: (reason: string) => {
        tombstonesBlocked = reason;
      },
      upstreamTotal: options.upstreamTotal,
      conditional: validators ? conditionalHeaders(validators) : undefined,
      markNotModified: (url: string) => {
        notModified = true;
        exportInfo = { url, ...validators };
      },
      knownLines,
    };
    if (attempt === 1 && source.paging) {
      const resume = await prepareResume({
        connection,
        runId,
        source,
        upstreamUrl,
        ctx,
        logger,
      });
      if (resume) {
        counters = { ...resume.counters };
        page = resume.page;
        writer = new StagingWriter(connection, {
          ...target,
          startSeq: resume.nextSeq,
          startBatch: resume.batch,
        });
        exportInfoSaved = true;
        ctx.resumeFrom = {
          page: resume.page,
          nextUrl: resume.nextUrl,
          rowsRead: resume.counters.recordsRead,
          ...resume.validator,
        };
        ctx.conditional = undefined;
      }
    }
    let lastMark: { page: number; nextUrl?: string | undefined } | undefined;
    await writer.open();
    progress(); // the run is under way: a display can start before the first batch
    let sinceYield = 0;
    for await (const item of source.read(ctx)) {
      // Records of a buffered page (or a fast body) arrive as microtasks only: let the event loop run now
      // and then so sockets are read meanwhile (the next CSV page downloads while this one is staged) and a
      // daemon's reader keeps answering.
      if (++sinceYield === 1024) {
        sinceYield = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (options.signal?.aborted) throw abortError();
      if (item.kind === 'checkpoint') {
        page = item.page;
        counters.pages = item.page;
        lastMark = { page: item.page, nextUrl: item.nextUrl };
        // Whole pages per commit, at least a batch of records each: a commit per page of 5,000 rows cost
        // ~110 ms of WAL write and sync (measured); resume loses at most one batch of pages.
        if (writer.pending >= config.batchSize) await flush(lastMark);
        progress();
        continue;
      }
      if (item.kind === 'block') {
        // NDJSON lines or a CSV page decoded in a worker by the same rules as below (extract/ndjson-block.ts,
        // extract/csv-page-decode.ts).
        counters.recordsRead += item.block.read;
        counters.recordsLoaded += item.block.loaded;
        counters.recordsRejected += item.block.rejected;
        writer.addBlock(item.block);
      } else if (item.kind === 'malformed') {
        counters.recordsRead++;
        counters.recordsRejected++;
        writer.reject(item);
      } else {
        counters.recordsRead++;
        const result = source.validate(item.value, item.raw, limits);
        if (result.ok) {
          counters.recordsLoaded++;
          const json = canonicalJson(result.report);
          const hash = contentHash(result.report, json);
          writer.add(result.report, json, hash, item.location, item.seq);
        } else {
          counters.recordsRejected++;
          writer.reject({
            location: item.location,
            raw: item.raw,
            recordId: recordIdOf(item.value),
            issues: result.issues,
          });
        }
      }
      // A paged source commits whole pages only: a page cut in two could not be resumed exactly.
      if (writer.pending >= config.batchSize && !source.paging) {
        await flush({ page });
        progress();
        await failpoint('after-batch', () => writer.drain());
      }
    }
    if (writer.pending > 0 || !source.paging) await flush(lastMark ?? { page });
    await writer.finish();
    progress();
  };

  try {
    await withRetry(`${source.name} export`, config, logger, readAll, options.signal);
    if (notModified) {
      await finishNotModified(connection, { runId, now: new Date(), counters, attempts, exportInfo });
      const durationMs = Date.now() - started.getTime();
      logger.info({ durationMs, ...validators }, 'run succeeded: the export is not modified (304)');
      return {
        runId,
        source: source.name,
        status: 'succeeded',
        counters,
        durationMs,
        attempts,
        exportInfo,
        notModified,
      };
    }
    checkAccounting(counters);
    checkRejectRatio(counters, config.maxRejectRatio);
    const complete = incompleteReason === undefined;
    await options.beforeMerge?.({
      runId,
      counters,
      exportInfo,
      complete,
      incompleteReason,
      tombstonesBlocked,
    });
    await connection.run('BEGIN TRANSACTION');
    try {
      const now = await mergeTime(connection, (options.clock ?? systemClock)(), logger);
      const merged = await mergeStaging(connection, { runId, source: source.name, now });
      checkStaged(merged.staged, counters);
      Object.assign(counters, {
        duplicates: merged.duplicates,
        inserted: merged.inserted,
        updated: merged.updated,
        unchanged: merged.unchanged,
        revived: merged.revived,
      });
      await options.afterMerge?.({
        connection,
        runId,
        now,
        counters,
        exportInfo,
        complete,
        incompleteReason,
        tombstonesBlocked,
      });
      await saveCounters(connection, runId, counters);
      await saveFacts(connection, runId, {
        attempts,
        complete,
        outcome: changedAny(counters) ? 'changed' : 'unchanged',
        exportEtag: exportInfo?.etag ?? null,
        exportLastModified: exportInfo?.lastModified ?? null,
      });
      await clearStaging(connection, runId);
      await finishRun(connection, runId, 'succeeded');
      await failpoint('in-merge');
      await connection.run('COMMIT');
    } catch (err) {
      await connection.run('ROLLBACK').catch(() => undefined);
      throw err;
    }
    await failpoint('after-commit');
    const summary = {
      runId,
      source: source.name,
      status: 'succeeded' as const,
      counters,
      attempts,
      exportInfo,
    };
    const durationMs = Date.now() - started.getTime();
    logger.info({ ...counters, durationMs }, 'run succeeded');
    return { ...summary, durationMs };
  } catch (err) {
    // Drop the batch not flushed (its staged rows), wait for a commit still running; its rejects and those
    // of a batch whose commit failed are stored with the run log, so records_rejected matches them.
    const uncommitted = await writer.close();
    const aborted = options.signal?.aborted === true || isSyncError(err, 'RUN_ABORTED');
    const warehousePath = resolve(config.warehouse);
    const error = asSyncError(err, warehousePath);
    try {
      await recordFailure(
        connection,
        runId,
        aborted ? 'aborted' : 'failed',
        error,
        counters,
        attempts,
        exportInfo,
        { ...target, rejects: uncommitted },
      );
    } catch (recordErr) {
      // The warehouse cannot take even the run log (disk full, invalidated database): the run stays
      // `running` in the file and the next start closes it as aborted (closeStaleRuns).
      logger.error({ err: error.toJSON() }, 'run failed and could not be recorded');
      throw warehouseWriteError(recordErr, warehousePath) ?? error;
    }
    logger.error({ err: error.toJSON(), ...counters }, aborted ? 'run aborted' : 'run failed');
    return {
      runId,
      source: source.name,
      status: aborted ? 'aborted' : 'failed',
      counters,
      durationMs: Date.now() - started.getTime(),
      attempts,
      exportInfo,
      error,
    };
  }
}

async function recordFailure(
  connection: DuckDBConnection,
  runId: string,
  status: 'failed' | 'aborted',
  error: SyncError,
  counters: RunCounters,
  attempts: number,
  exportInfo: ExportInfo | undefined,
  uncommitted: { runId: string; source: string; rawMaxBytes: number; rejects: Reject[] },
): Promise<void> {
  try {
    await writeFailure(
      connection,
      runId,
      status,
      error,
      counters,
      attempts,
      exportInfo,
      uncommitted.rejects,
      uncommitted,
    );
  } catch (err) {
    if (uncommitted.rejects.length === 0) throw err;
    // The quarantine entries themselves cannot be written (disk full?): the run log alone, counting only
    // the rejects that are stored.
    counters.recordsRejected -= uncommitted.rejects.length;
    await writeFailure(connection, runId, status, error, counters, attempts, exportInfo, [], uncommitted);
  }
}

async function writeFailure(
  connection: DuckDBConnection,
  runId: string,
  status: 'failed' | 'aborted',
  error: SyncError,
  counters: RunCounters,
  attempts: number,
  exportInfo: ExportInfo | undefined,
  rejects: Reject[],
  target: { runId: string; source: string; rawMaxBytes: number },
): Promise<void> {
  await connection.run('BEGIN TRANSACTION');
  try {
    await writeFailureRows(connection, runId, status, error, counters, attempts, exportInfo);
    await appendRejects(connection, target, rejects);
    await connection.run('COMMIT');
  } catch (err) {
    await connection.run('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

async function writeFailureRows(
  connection: DuckDBConnection,
  runId: string,
  status: 'failed' | 'aborted',
  error: SyncError,
  counters: RunCounters,
  attempts: number,
  exportInfo: ExportInfo | undefined,
): Promise<void> {
  await connection.run('DELETE FROM staging_reports WHERE run_id = $run', { run: runId });
  await connection.run('DELETE FROM staging_seen WHERE run_id = $run', { run: runId });
  await connection.run('DELETE FROM sync_checkpoints WHERE run_id = $run', { run: runId });
  await saveCounters(connection, runId, counters);
  await saveFacts(connection, runId, {
    attempts,
    complete: false,
    exportEtag: exportInfo?.etag ?? null,
    exportLastModified: exportInfo?.lastModified ?? null,
  });
  await finishRun(connection, runId, status, error.toJSON());
}

/**
 * No silent loss: every record read is either loaded or rejected. A mismatch is a bug in an
 * extract stage, and merging would hide it, so the run fails instead.
 */
function checkAccounting(c: RunCounters): void {
  if (c.recordsRead === c.recordsLoaded + c.recordsRejected) return;
  throw new SyncError(
    'COUNT_MISMATCH',
    `${c.recordsRead} records read but ${c.recordsLoaded} loaded + ${c.recordsRejected} rejected: ` +
      `nothing merged (a bug: please report it with this run's id)`,
    { context: { read: c.recordsRead, loaded: c.recordsLoaded, rejected: c.recordsRejected } },
  );
}

/** Staging must hold exactly the records counted as loaded (none lost or doubled by a restart). */
function checkStaged(staged: number, c: RunCounters): void {
  if (staged === c.recordsLoaded) return;
  throw new SyncError(
    'COUNT_MISMATCH',
    `staging holds ${staged} records but ${c.recordsLoaded} were loaded: nothing merged (a bug: ` +
      `please report it with this run's id)`,
    { context: { staged, loaded: c.recordsLoaded } },
  );
}

/** Fails a run whose rejected/read ratio is over the limit (DESIGN.md §5, default 5%). */
function checkRejectRatio(c: RunCounters, max: number): void {
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

function asSyncError(err: unknown, warehousePath: string): SyncError {
  if (err instanceof SyncError) return err;
  if (err instanceof Error && err.name === 'AbortError') return abortError();
  return (
    warehouseWriteError(err, warehousePath) ?? new SyncError('RUN_FAILED', errorMessage(err), { cause: err })
  );
}

function abortError(): SyncError {
  return new SyncError('RUN_ABORTED', 'the run was stopped before it finished (shutdown)');
}
