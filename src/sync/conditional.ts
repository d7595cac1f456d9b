import type { DuckDBConnection } from '@duckdb/node-api';
import { isSyncError } from '../util/errors.js';
import type { RunCounters } from '../warehouse/run-counters.js';
import { finishRun, saveCounters, saveFacts } from '../warehouse/runs.js';
import { clearStaging } from '../warehouse/merge.js';
import type { ExportInfo, ExportValidator } from './export-source.js';

/**
 * The validators (ETag, Last-Modified) of the last succeeded, complete run of `source` against the same
 * upstream: what a conditional request of the next full export sends. `undefined` when there is none, or
 * when that run recorded neither validator (never an older run's).
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
       ORDER BY started_at DESC LIMIT 1`,
      { source, url: upstreamUrl },
    )
  ).getRowObjectsJS()[0];
  // That run's validators or none: an older run's would be answered 304 for an export this run no longer
  // holds (the upstream went back to it after sending one without validators).
  if (!row || (row.export_etag === null && row.export_last_modified === null)) return undefined;
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
  if (v?.lastModified && !Number.isNaN(Date.parse(v.lastModified))) {
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
 * inferred (the export is the one the last complete run read), every current report's `last_seen_at` and
 * `run_id` are touched in one statement (it was seen: the export that holds it is unchanged), and the run is recorded
 * as succeeded, complete, `not_modified`, outcome `unchanged`, with the validators it sent.
 */
export async function finishNotModified(
  connection: DuckDBConnection,
  run: {
    runId: string;
    now: Date;
    counters: RunCounters;
    attempts: number;
    exportInfo: ExportInfo | undefined;
  },
): Promise<void> {
  await connection.run('BEGIN TRANSACTION');
  try {
    // run_id too, as every write of a report does: a publish finds the reports a run changed by it.
    await connection.run(
      `UPDATE reports SET last_seen_at = $now::TIMESTAMPTZ, run_id = $run WHERE removed_at IS NULL`,
      { now: run.now.toISOString(), run: run.runId },
    );
    await saveCounters(connection, run.runId, run.counters);
    await saveFacts(connection, run.runId, {
      attempts: run.attempts,
      complete: true,
      notModified: true,
      outcome: 'unchanged',
      exportEtag: run.exportInfo?.etag ?? null,
      exportLastModified: run.exportInfo?.lastModified ?? null,
    });
    await clearStaging(connection, run.runId);
    await finishRun(connection, run.runId, 'succeeded');
    await connection.run('COMMIT');
  } catch (err) {
    await connection.run('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
