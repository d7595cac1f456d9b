import type { DuckDBConnection } from '@duckdb/node-api';
import { LAST_RESET_SQL } from '../warehouse/data-tables.js';
import { isSyncError } from '../util/errors.js';
import { parseHttpDate } from '../util/http-date.js';
import type { RunCounters } from '../warehouse/run-counters.js';
import type { RunLog } from '../warehouse/runs.js';
import { dropRunStaging, withTransaction } from '../warehouse/transaction.js';
import { mergeTime } from '../warehouse/merge-time.js';
import { HELD_BACK } from '../warehouse/tombstones.js';
import type { Logger } from '../util/logger.js';
import type { ExportInfo, ExportValidator } from './export-source.js';

/**
 * The validators (ETag, Last-Modified) of the last succeeded, complete run of `source` against the same
 * upstream: what a conditional request of the next full export sends. `undefined` when there is none, when
 * that run recorded neither validator (never an older run's), or when the last such run that read the
 * export (not answered 304) held its deletes back (`tombstones_note` {@link HELD_BACK}: `/stats` failed,
 * a count that differs, …): a 304 infers no deletes, so answered so, those reports would stay current for
 * as long as the export does not change. Read again, the export gets its deletes checked again.
 * Nor when a run of another source removed reports since that read: the warehouse no longer holds what this
 * export held (the CSV export tombstoned a report the NDJSON export, unchanged, still publishes: a 304 would
 * keep it removed for as long as the NDJSON export does not change).
 */
export async function lastCompleteValidators(
  connection: DuckDBConnection,
  source: string,
  upstreamUrl: string | undefined,
): Promise<ExportValidator | undefined> {
  if (upstreamUrl === undefined) return undefined;
  const row = (
    await connection.runAndReadAll(
      `SELECT export_etag, export_last_modified FROM sync_runs
       WHERE source = $source AND status = 'succeeded' AND complete AND upstream_url = $url
         AND started_at > ${LAST_RESET_SQL}
       ORDER BY started_at DESC LIMIT 1`,
      { source, url: upstreamUrl },
    )
  ).getRowObjectsJS()[0];
  // That run's validators or none: an older run's would be answered 304 for an export this run no longer
  // holds (the upstream went back to it after sending one without validators).
  if (!row || (row.export_etag === null && row.export_last_modified === null)) return undefined;
  const read = (
    await connection.runAndReadAll(
      `SELECT starts_with(coalesce(r.tombstones_note, ''), $heldBack) AS held_back,
         EXISTS (SELECT 1 FROM sync_runs o WHERE o.source <> r.source AND o.status = 'succeeded'
           AND o.removed > 0 AND o.finished_at > r.started_at) AS others_removed
       FROM sync_runs r
       WHERE r.source = $source AND r.status = 'succeeded' AND r.complete AND r.upstream_url = $url
         AND NOT coalesce(r.not_modified, false) AND r.started_at > ${LAST_RESET_SQL}
       ORDER BY r.started_at DESC LIMIT 1`,
      { source, url: upstreamUrl, heldBack: HELD_BACK },
    )
  ).getRowObjectsJS()[0];
  if (read?.held_back === true || read?.others_removed === true) return undefined;
  return {
    etag: row.export_etag === null ? undefined : String(row.export_etag),
    lastModified: row.export_last_modified === null ? undefined : String(row.export_last_modified),
  };
}

/**
 * The request headers of a conditional GET (RFC 9110 §13.1): `If-None-Match` with the ETag, and
 * `If-Modified-Since` with the Last-Modified date when it is one (a server must ignore the latter when the
 * former is present, so sending both is safe).
 */
export function conditionalHeaders(v: ExportValidator | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (v?.etag) headers['if-none-match'] = v.etag;
  if (v?.lastModified && parseHttpDate(v.lastModified) !== undefined) {
    headers['if-modified-since'] = v.lastModified;
  }
  return headers;
}

/** True for the error `openStream` throws on a `304 Not Modified` answer. */
export function isNotModified(err: unknown): boolean {
  return isSyncError(err, 'HTTP_STATUS') && err.context.status === 304;
}

/**
 * Finishes a run whose export answered 304 in one transaction: nothing is merged and no tombstone is
 * inferred (the export is the one the last complete run read), the run is recorded as having seen every
 * current report (`sync_runs.seen_all_at`, its merge time: the `reports` view lifts their `last_seen_at`
 * and `run_id` to it, migration 020; no row is written) except those the last complete run did not see
 * either (`unseen_since`), and as succeeded, complete, `not_modified`, outcome `unchanged`, with the
 * validators it sent.
 */
export async function finishNotModified(
  log: RunLog,
  run: {
    now: Date;
    counters: RunCounters;
    attempts: number;
    exportInfo: ExportInfo | undefined;
    logger: Logger;
  },
): Promise<void> {
  await withTransaction(log.connection, async (c) => {
    const at = await mergeTime(c, run.now, run.logger);
    // Nothing was staged but a checkpoint row perhaps (the 304 ends the read at once).
    await dropRunStaging(c, log.runId);
    const facts = {
      seenAllAt: at,
      attempts: run.attempts,
      complete: true,
      notModified: true,
      outcome: 'unchanged' as const,
      exportEtag: run.exportInfo?.etag ?? null,
      exportLastModified: run.exportInfo?.lastModified ?? null,
    };
    await log.succeed(run.counters, facts, at);
  });
}
