import { redactSecrets } from '../util/redact.js';
import { storableJson } from '../util/storable-json.js';
import { randomBytes } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { RunCounters } from './run-counters.js';

/** Outcome of a run as stored in `sync_runs.status`. */
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'aborted';

/**
 * A new run id: sortable by start time, unique per process (`20261121T144800123Z-ndjson-1a2b3c`).
 */
export function newRunId(source: string, now: Date = new Date()): string {
  return `${now.toISOString().replace(/[-:.]/g, '')}-${source}-${randomBytes(3).toString('hex')}`;
}

/** Extra facts a run may record; only the given ones are written. */
export interface RunFacts {
  exportEtag?: string | null;
  exportLastModified?: string | null;
  attempts?: number;
  complete?: boolean;
  tombstonesNote?: string | null;
  statsTotalUpstream?: number | null;
  statsTotalWarehouse?: number | null;
  statsTotalDiff?: number | null;
  /** Rows per page asked of a paged export (migration 002). */
  pageSize?: number | null;
  /** The interrupted run whose committed pages this run adopted (migration 002). */
  resumedFromRun?: string | null;
  /** First page this run fetched itself after adopting an interrupted run's pages (migration 002). */
  resumedAtPage?: number | null;
  /** The export answered 304 Not Modified to the run's conditional request (migration 005). */
  notModified?: boolean | null;
  /** What a succeeded run did to the reports: `changed` or `unchanged` (migration 005). */
  outcome?: 'changed' | 'unchanged' | null;
  /** The run saw every current report, at this merge time (migration 020; merge-seen.ts). */
  seenAllAt?: Date | null;
}

/**
 * `sync_runs` rows of the runs that changed the reports: succeeded, and inserted, updated, removed, revived
 * or refined one. The last of them names the data state a reader serves (its `ETag` and `Last-Modified`),
 * on DuckDB (reader/last-success.ts) and on PostgreSQL (`publish_state.served_run_id`).
 */
export const CHANGED_REPORTS_SQL = `status = 'succeeded' AND finished_at IS NOT NULL
  AND inserted + updated + removed + revived + refined > 0`;

const FACT_COLUMNS: Record<keyof RunFacts, string> = {
  exportEtag: 'export_etag',
  exportLastModified: 'export_last_modified',
  attempts: 'attempts',
  complete: 'complete',
  tombstonesNote: 'tombstones_note',
  statsTotalUpstream: 'stats_total_upstream',
  statsTotalWarehouse: 'stats_total_warehouse',
  statsTotalDiff: 'stats_total_diff',
  pageSize: 'page_size',
  resumedFromRun: 'resumed_from_run',
  resumedAtPage: 'resumed_at_page',
  notModified: 'not_modified',
  outcome: 'outcome',
  seenAllAt: 'seen_all_at',
};

/** What a run's log row is opened with (see {@link RunLog.open}). */
export interface RunStart {
  job: string;
  source: string;
  /** The upstream's base URL without credentials. */
  upstreamUrl?: string | undefined;
  startedAt: Date;
  /** How the run reads the upstream (`sync_runs.reading`, migration 043; normalize/known-lines.ts `readingKey`). */
  reading?: string | undefined;
}

/**
 * The run log row of one run (`sync_runs`), and its one writer: the runner drives it through the run's
 * life cycle — {@link open}, then {@link note} and {@link progress} while the run reads (its export's
 * validator, a resume, each checkpoint's counters), then {@link succeed} or {@link fail} — and nothing
 * else writes a run's row (docs/how-a-sync-works.md, the run log). Every write goes on the connection the
 * log was opened on: inside a transaction open there, it commits or rolls back with the work it describes.
 */
export class RunLog {
  private constructor(
    readonly connection: DuckDBConnection,
    readonly runId: string,
  ) {}

  /** Inserts the row of a starting run (status `running`) under a new run id. */
  static async open(connection: DuckDBConnection, run: RunStart): Promise<RunLog> {
    const runId = newRunId(run.source, run.startedAt);
    await connection.run(
      `INSERT INTO sync_runs (run_id, job, source, status, started_at, upstream_url, reading)
       VALUES ($run, $job, $source, 'running', $started::TIMESTAMPTZ, $url, $reading)`,
      {
        run: runId,
        job: run.job,
        source: run.source,
        started: run.startedAt.toISOString(),
        url: run.upstreamUrl ?? null,
        reading: run.reading ?? null,
      },
    );
    return new RunLog(connection, runId);
  }

  /**
   * Records a full refresh as a run of job and source `reset` that started and succeeded at `at`, with
   * `note` saying what was emptied. Returns its run id.
   */
  static async recordReset(connection: DuckDBConnection, at: Date, note: string): Promise<string> {
    const runId = newRunId('reset', at);
    await connection.run(
      `INSERT INTO sync_runs (run_id, job, source, status, started_at, finished_at, complete, outcome, note)
       VALUES ($run, 'reset', 'reset', 'succeeded', $at::TIMESTAMPTZ, $at::TIMESTAMPTZ, true, 'changed', $note)`,
      { run: runId, at: at.toISOString(), note },
    );
    return runId;
  }

  /** Marks a run a dead process left `running` as `aborted` (`RUN_INTERRUPTED`; stale-runs.ts). */
  static async markInterrupted(connection: DuckDBConnection, runId: string): Promise<void> {
    // Ended at its last sign of life (its start, a committed batch or page, a quarantined record), not when
    // the next process found it: a run killed at 02:00 and closed at the next night's start lasted minutes.
    await connection.run(
      `UPDATE sync_runs SET status = 'aborted',
         finished_at = greatest(started_at,
           (SELECT max(committed_at) FROM sync_checkpoints c WHERE c.run_id = $run),
           (SELECT max(rejected_at) FROM rejected_records q WHERE q.run_id = $run)),
         error = '{"code":"RUN_INTERRUPTED","message":"the process ended before the run finished"}'::JSON
       WHERE run_id = $run`,
      { run: runId },
    );
  }

  /** Records facts about the run (the export's validator, a resume, completeness, stats comparison). */
  async note(facts: RunFacts): Promise<void> {
    const entries = Object.entries(facts).filter(([, v]) => v !== undefined) as [keyof RunFacts, unknown][];
    if (entries.length === 0) return;
    // A Date travels as ISO text, cast back by DuckDB.
    const sets = entries.map(
      ([k, v]) => `${FACT_COLUMNS[k]} = $${k}${v instanceof Date ? '::TIMESTAMPTZ' : ''}`,
    );
    const params = Object.fromEntries(
      entries.map(([k, v]) => [
        k,
        v instanceof Date ? v.toISOString() : (v as string | number | boolean | null),
      ]),
    );
    await this.connection.run(`UPDATE sync_runs SET ${sets.join(', ')} WHERE run_id = $run`, {
      ...params,
      run: this.runId,
    });
  }

  /** Writes the run's counters (call inside the transaction that commits the work they describe). */
  async progress(c: RunCounters): Promise<void> {
    await this.connection.run(
      `UPDATE sync_runs SET records_read = $read, records_loaded = $loaded, records_rejected = $rejected,
         duplicates = $duplicates, inserted = $inserted, updated = $updated, unchanged = $unchanged,
         refined = $refined, removed = $removed, revived = $revived, quality_flags = $flags, bytes_read = $bytes,
         bytes_wire = $wire, pages = $pages
       WHERE run_id = $run`,
      {
        run: this.runId,
        read: c.recordsRead,
        loaded: c.recordsLoaded,
        rejected: c.recordsRejected,
        duplicates: c.duplicates,
        inserted: c.inserted,
        updated: c.updated,
        unchanged: c.unchanged,
        refined: c.refined,
        removed: c.removed,
        revived: c.revived,
        flags: c.qualityFlags,
        bytes: c.bytesRead,
        wire: c.bytesWire,
        pages: c.pages,
      },
    );
  }

  /**
   * Ends the run `succeeded` with its counters and facts. `mergedAt`, for a run that merged (or answered
   * 304), is its merge time (merge-time.ts): recorded as `merged_at`, and `finished_at` is not before it.
   * Call inside the transaction that commits the run's work.
   */
  async succeed(counters: RunCounters, facts: RunFacts, mergedAt?: Date): Promise<void> {
    await this.progress(counters);
    await this.note(facts);
    await this.#finish('succeeded', undefined, mergedAt);
  }

  /**
   * Ends the run `failed` or `aborted` with its counters, facts and error (as JSON, secrets redacted). The
   * counters are those of work that committed: nothing a rolled-back merge counted.
   */
  async fail(
    status: 'failed' | 'aborted',
    error: Record<string, unknown>,
    counters?: RunCounters,
    facts: RunFacts = {},
  ): Promise<void> {
    if (counters) await this.progress(counters);
    await this.note(facts);
    await this.#finish(status, error);
  }

  /**
   * `finished_at` is the clock's time when this is called (the end of the run's work; DuckDB's `now()`
   * would be the start of the transaction, before the merge), and not before `notBefore`.
   */
  async #finish(status: Exclude<RunStatus, 'running'>, error?: Record<string, unknown>, notBefore?: Date) {
    await this.connection.run(
      `UPDATE sync_runs SET status = $status, finished_at = greatest($now::TIMESTAMPTZ, $notBefore::TIMESTAMPTZ),
         merged_at = $merged::TIMESTAMPTZ,
         error = $error::JSON WHERE run_id = $run`,
      {
        run: this.runId,
        status,
        error: error ? redactSecrets(storableJson(error)) : null,
        now: new Date().toISOString(),
        notBefore: (notBefore ?? new Date(0)).toISOString(),
        merged: notBefore === undefined ? null : notBefore.toISOString(),
      },
    );
  }
}
