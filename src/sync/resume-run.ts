import type { DuckDBConnection } from '@duckdb/node-api';
import type { Logger } from '../util/logger.js';
import { emptyCounters, type RunCounters } from '../warehouse/run-counters.js';
import type { RunLog } from '../warehouse/runs.js';
import type { ExportSource, ExportValidator, ReadContext } from './export-source.js';
import { compareValidators } from './sources/export-validators.js';
import { dropRunStaging, withTransaction } from '../warehouse/transaction.js';

/** Where a run goes on from after adopting the committed pages of an interrupted run. */
export interface ResumePoint {
  /** The interrupted run whose staging, checkpoints and rejects now belong to this run. */
  fromRunId: string;
  /** Last page it committed; this run fetches `page + 1` next. */
  page: number;
  /** URL of the next page as recorded with the checkpoint (a `Link` target or the computed page URL). */
  nextUrl: string;
  /** Its counters as of that checkpoint (records, bytes, pages). */
  counters: RunCounters;
  /** Checkpoint batch number to continue from. */
  batch: number;
  /** The export validator it saw, equal to page 1's now. */
  validator: ExportValidator;
}

/** Options of {@link prepareResume}. */
export interface PrepareResumeOptions {
  connection: DuckDBConnection;
  /** The new run's log row, already in `sync_runs`. */
  log: RunLog;
  source: ExportSource;
  /** Upstream base URL of this run (only a run of the same upstream is resumed). */
  upstreamUrl: string | undefined;
  /** Read context for the page-1 probe. */
  ctx: ReadContext;
  logger: Logger;
}

/**
 * Resume of a paged export (docs/how-a-sync-works.md). A CSV run killed mid-export leaves its committed pages
 * (staging rows, rejects, one checkpoint per page; see `closeStaleRuns`). This looks at the newest such
 * interrupted run of the same source, and adopts its pages (moves them to `runId` in one transaction, and
 * records `resumed_from_run`/`resumed_at_page`) when all of these hold:
 * - same upstream base URL and page size;
 * - it recorded an export validator, and page 1 answers with the same one now (`ETag` when both have one,
 *   else `Last-Modified`): the export has not changed, so the remaining pages continue it;
 * - its last checkpoint names the next page (a run interrupted after its last page restarts instead: it
 *   may have stopped for a reason that made it incomplete).
 * Otherwise, and for every older interrupted run of the source, the leftover staging and checkpoints are
 * dropped and the run starts from page 1 (rejects stay with the run that found them).
 *
 * @returns the resume point, or `undefined` to start from page 1
 * @throws what the probe throws (network errors after retries; the interrupted run's pages are dropped
 *   first), and DuckDB errors
 */
export async function prepareResume(options: PrepareResumeOptions): Promise<ResumePoint | undefined> {
  const { connection: c, log, source, logger } = options;
  if (!source.paging) return undefined;
  const [newest, ...older] = await interruptedRuns(c, source.name, log.runId);
  for (const old of older) await dropLeftovers(c, String(old.run_id));
  if (newest === undefined) return undefined;
  const fromRunId = String(newest.run_id);
  const last = (
    await c.runAndReadAll(
      `SELECT batch, page, records_read, records_loaded, records_rejected, bytes_read, next_url
       FROM sync_checkpoints WHERE run_id = $run AND page IS NOT NULL ORDER BY batch DESC LIMIT 1`,
      { run: fromRunId },
    )
  ).getRowObjectsJS()[0];
  const saved: ExportValidator = {
    etag: optional(newest.export_etag),
    lastModified: optional(newest.export_last_modified),
  };
  const reason = await whyNotResume(options, { newest, last, saved });
  if (reason !== undefined || last === undefined) {
    logger.info(
      { interruptedRun: fromRunId, reason },
      'not resuming the interrupted run: starting from page 1',
    );
    await dropLeftovers(c, fromRunId);
    return undefined;
  }
  const page = Number(last.page);
  const counters: RunCounters = {
    ...emptyCounters(),
    recordsRead: Number(last.records_read),
    recordsLoaded: Number(last.records_loaded),
    recordsRejected: Number(last.records_rejected),
    bytesRead: Number(last.bytes_read),
    // Saved with the counters in the checkpoint's transaction, so it matches the last checkpoint.
    bytesWire: Number(newest.bytes_wire ?? 0),
    pages: page,
  };
  await adopt(c, log, { fromRunId, counters, page, saved });
  logger.info(
    { interruptedRun: fromRunId, page: page + 1, recordsRead: counters.recordsRead },
    'resuming an interrupted run: its committed pages are adopted',
  );
  return {
    fromRunId,
    page,
    nextUrl: String(last.next_url),
    counters,
    batch: Number(last.batch),
    validator: saved,
  };
}

type Row = Record<string, unknown>;

/** The aborted runs of `source` (but `runId`) that left committed pages, newest first. */
async function interruptedRuns(c: DuckDBConnection, source: string, runId: string): Promise<Row[]> {
  const rows = await c.runAndReadAll(
    `SELECT run_id, upstream_url, page_size, export_etag, export_last_modified, bytes_wire
     FROM sync_runs r
     WHERE source = $source AND status = 'aborted' AND run_id <> $run
       AND EXISTS (SELECT 1 FROM sync_checkpoints k WHERE k.run_id = r.run_id AND k.page IS NOT NULL)
     ORDER BY started_at DESC`,
    { source, run: runId },
  );
  return rows.getRowObjectsJS() as Row[];
}

/**
 * Why the newest interrupted run cannot be resumed (see {@link prepareResume}), or `undefined` when it
 * can: page 1 is probed last, only when everything else holds.
 *
 * @throws what the probe throws (the interrupted run's pages are dropped first)
 */
async function whyNotResume(
  options: PrepareResumeOptions,
  run: { newest: Row; last: Row | undefined; saved: ExportValidator },
): Promise<string | undefined> {
  const { newest, last, saved } = run;
  const paging = options.source.paging!;
  const pageSize = paging.pageSize(options.ctx.config);
  if (last === undefined || last.next_url === null) return 'its last page was the end of the export';
  if (optional(newest.upstream_url) !== options.upstreamUrl) return 'it read another upstream';
  if (Number(newest.page_size) !== pageSize) return `it used pageSize ${String(newest.page_size)}`;
  if (saved.etag === undefined && saved.lastModified === undefined) {
    return 'the export had no ETag or Last-Modified';
  }
  let now: ExportValidator;
  try {
    now = await paging.probe(options.ctx);
  } catch (err) {
    // The run fails or restarts from page 1: these pages must not be picked up later instead.
    await dropLeftovers(options.connection, String(newest.run_id));
    throw err;
  }
  return compareValidators(saved, now) === 'same'
    ? undefined
    : 'the export changed since (page 1 has another validator)';
}

/**
 * Moves the interrupted run's staging, checkpoints, rejects and counters to the new run (the interrupted
 * run's row keeps none), and records the resume and the export's validator in the new run's log row, in
 * one transaction.
 */
async function adopt(
  c: DuckDBConnection,
  log: RunLog,
  from: { fromRunId: string; counters: RunCounters; page: number; saved: ExportValidator },
): Promise<void> {
  await withTransaction(c, async () => {
    for (const table of ['staging_reports', 'staging_seen', 'sync_checkpoints', 'rejected_records']) {
      await c.run(`UPDATE ${table} SET run_id = $new WHERE run_id = $old`, {
        new: log.runId,
        old: from.fromRunId,
      });
    }
    // The interrupted run's counters go with its pages: its row keeps no records (nor rejects) of its own,
    // so sums over the run log count each record once.
    await c.run(
      `UPDATE sync_runs SET records_read = 0, records_loaded = 0, records_rejected = 0, duplicates = 0,
         bytes_read = 0, bytes_wire = 0, pages = 0
       WHERE run_id = $old`,
      { old: from.fromRunId },
    );
    await log.progress(from.counters);
    await log.note({
      resumedFromRun: from.fromRunId,
      resumedAtPage: from.page + 1,
      exportEtag: from.saved.etag ?? null,
      exportLastModified: from.saved.lastModified ?? null,
    });
  });
}

/** Drops what an interrupted run left in the working tables (its rejects stay, as evidence of that run). */
async function dropLeftovers(c: DuckDBConnection, runId: string): Promise<void> {
  await withTransaction(c, () => dropRunStaging(c, runId));
}

function optional(value: unknown): string | undefined {
  return value === null || value === undefined ? undefined : String(value);
}
