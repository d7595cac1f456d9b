import type { DuckDBConnection } from '@duckdb/node-api';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import type { KnownLines } from '../normalize/known-lines.js';
import { isSyncError } from '../util/errors.js';
import { failpoint } from '../util/failpoint.js';
import type { Logger } from '../util/logger.js';
import type { RunLog } from '../warehouse/runs.js';
import { StagingWriter, type CheckpointInfo, type StagingTarget } from '../warehouse/staging.js';
import { conditionalHeaders } from './conditional.js';
import type { ExportSource, ExportValidator, ReadContext, ReadOutcome, SourceItem } from './export-source.js';
import { prepareResume } from './resume-run.js';
import type { RunState } from './run-state.js';
import { abortError } from './run-errors.js';

/** What one read of an export works with (fixed for the run); `staging` is replaced per attempt. */
export interface ExportRead {
  connection: DuckDBConnection;
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  source: ExportSource;
  runId: string;
  /** The run's log row (runs.ts): the only writer of it. */
  log: RunLog;
  /** Absolute path of the warehouse file (for `WAREHOUSE_WRITE` errors). */
  warehousePath: string;
  /** The upstream's base URL without credentials (a resume only adopts a run of the same upstream). */
  upstreamUrl: string | undefined;
  signal?: AbortSignal | undefined;
  upstreamTotal?: (() => Promise<number | undefined>) | undefined;
  knownLines?: KnownLines | undefined;
  /** The validators of the last complete run of this export: its first request is conditional on them. */
  validators?: ExportValidator | undefined;
  target: StagingTarget;
  state: RunState;
  staging: { writer: StagingWriter };
  /** Called after each batch is handed to its commit, and at the end of the read. */
  progress: () => void;
}

/**
 * Reads the export once (attempt `attempt` of the runner's retries) into staging: a restart discards what
 * earlier attempts staged (never splicing attempts, docs/how-a-sync-works.md); a paged source's first attempt may adopt
 * an interrupted run's committed pages (resume-run.ts). Blocks are staged in batches of
 * `config.batchSize` records, a paged source's only at page ends (a page cut in two could not be resumed
 * exactly); the export's validator is saved before the first batch.
 *
 * @throws the source's failure, a commit failure, or `RUN_ABORTED` when `signal` aborts
 */
export async function readExport(run: ExportRead, attempt: number): Promise<void> {
  const { state, staging } = run;
  state.startAttempt(attempt);
  if (attempt > 1) await restart(run);
  const ctx: ReadContext = {
    config: run.config,
    dispatcher: run.dispatcher,
    logger: run.logger,
    signal: run.signal,
    upstreamTotal: run.upstreamTotal,
    knownLines: run.knownLines,
    conditional: run.validators ? conditionalHeaders(run.validators) : undefined,
    validatorUnstable: state.exportChanges > 0,
  };
  if (attempt === 1 && run.source.paging) await resume(run, ctx);
  const writer = staging.writer;
  await writer.open();
  const items = run.source.read(ctx);
  try {
    state.outcome = await stageItems(run, items);
  } catch (err) {
    if (isSyncError(err, 'EXPORT_CHANGED')) state.exportChanges++;
    throw err;
  } finally {
    await items.return(undefined).catch(() => undefined); // the source's clean-up, when it did not end
  }
  if (writer.pending > 0 || !run.source.paging) await flush(run, state.lastMark ?? { page: state.page });
  await writer.finish();
  run.progress();
}

/** A read again from the start: drops what earlier attempts staged, and the resume they recorded. */
async function restart(run: ExportRead): Promise<void> {
  await run.staging.writer.discard();
  run.knownLines?.resetSeen();
  run.staging.writer = new StagingWriter(run.connection, run.target);
  if (run.source.paging) await run.log.note({ resumedFromRun: null, resumedAtPage: null });
}

/**
 * Ends the current batch: hands it to its commit with the run's counters and `checkpoint`, after saving
 * the export's validator when it is not saved yet (a resume checks it).
 */
async function flush(run: ExportRead, checkpoint: CheckpointInfo): Promise<void> {
  const { state } = run;
  const writer = run.staging.writer;
  if (state.exportInfo && !state.exportInfoSaved) {
    await writer.drain(); // the connection is the background commit's until it is done
    await run.log.note({
      exportEtag: state.exportInfo.etag ?? null,
      exportLastModified: state.exportInfo.lastModified ?? null,
    });
    state.exportInfoSaved = true;
  }
  await writer.flush(state.counters, checkpoint);
}

/**
 * Counts and stages the source's items until it ends; returns how its read ended.
 *
 * @throws the source's failure, a commit failure, or `RUN_ABORTED` when `signal` aborts
 */
async function stageItems(
  run: ExportRead,
  items: AsyncGenerator<SourceItem, ReadOutcome | void>,
): Promise<ReadOutcome> {
  const { state, config, source } = run;
  const writer = run.staging.writer;
  let sinceYield = 0;
  for (;;) {
    const next = await items.next();
    if (next.done) return next.value ?? { complete: true };
    const item = next.value;
    // Items of a buffered page (or a fast body) arrive as microtasks only: let the event loop run now and
    // then so sockets are read meanwhile and a daemon's reader keeps answering.
    if (++sinceYield === 1024) {
      sinceYield = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (run.signal?.aborted) throw abortError();
    state.apply(item);
    if (item.kind === 'checkpoint') {
      // Whole pages per commit, at least a batch of records each: a commit per page of 5,000 rows cost
      // ~110 ms of WAL write and sync (measured); resume loses at most one batch of pages.
      if (writer.pending >= config.batchSize) {
        await flush(run, state.lastMark ?? {});
        await failpoint('after-page-batch', () => writer.drain());
      }
      run.progress();
    } else if (item.kind === 'block') {
      writer.addBlock(item.block);
      if (writer.pending >= config.batchSize && !source.paging) {
        await flush(run, { page: state.page });
        await failpoint('after-batch', () => writer.drain());
      }
      // Every block (the reporter throttles): a run shorter than a batch shows progress too.
      run.progress();
    } else if (item.kind === 'not-modified') {
      // A 304 to the conditional request: the export is still the version its validators name.
      state.exportInfo = { url: item.url, ...run.validators };
    }
  }
}

/** Adopts an interrupted run of the same paged export when it is safe (resume-run.ts). */
async function resume(run: ExportRead, ctx: ReadContext): Promise<void> {
  const { connection, log, source, upstreamUrl, logger } = run;
  const point = await prepareResume({ connection, log, source, upstreamUrl, ctx, logger });
  if (!point) return;
  run.state.resume(point);
  run.staging.writer = new StagingWriter(connection, { ...run.target, startBatch: point.batch });
  ctx.resumeFrom = {
    page: point.page,
    nextUrl: point.nextUrl,
    rowsRead: point.counters.recordsRead,
    ...point.validator,
  };
  ctx.conditional = undefined; // a resumed run continues a known version of the export
}
