import { redactSecrets } from '../util/redact.js';
import { randomBytes } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { RunCounters } from './run-counters.js';
import { dropRunStaging, withTransaction } from './transaction.js';

/** Outcome of a run as stored in `sync_runs.status`. */
export type RunStatus = 'running' | 'succeeded' | 'failed' | 'aborted';

/**
 * A new run id: sortable by start time, unique per process (`20261121T144800123Z-ndjson-1a2b3c`).
 */
export function newRunId(source: string, now: Date = new Date()): string {
  return `${now.toISOString().replace(/[-:.]/g, '')}-${source}-${randomBytes(3).toString('hex')}`;
}

/** Inserts the `sync_runs` row of a starting run (status `running`). */
export async function startRun(
  connection: DuckDBConnection,
  run: { runId: string; job: string; source: string; upstreamUrl?: string | undefined; startedAt: Date },
): Promise<void> {
  await connection.run(
    `INSERT INTO sync_runs (run_id, job, source, status, started_at, upstream_url)
     VALUES ($run, $job, $source, 'running', $started::TIMESTAMPTZ, $url)`,
    {
      run: run.runId,
      job: run.job,
      source: run.source,
      started: run.startedAt.toISOString(),
      url: run.upstreamUrl ?? null,
    },
  );
}

/** Writes the counters of a run (call inside the transaction that commits the work they describe). */
export async function saveCounters(
  connection: DuckDBConnection,
  runId: string,
  c: RunCounters,
): Promise<void> {
  await connection.run(
    `UPDATE sync_runs SET records_read = $read, records_loaded = $loaded, records_rejected = $rejected,
       duplicates = $duplicates, inserted = $inserted, updated = $updated, unchanged = $unchanged,
       refined = $refined, removed = $removed, revived = $revived, quality_flags = $flags, bytes_read = $bytes,
       bytes_wire = $wire, pages = $pages
     WHERE run_id = $run`,
    {
      run: runId,
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
}

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
};

/** Records facts about a run (validator of the export, attempts, completeness, stats comparison). */
export async function saveFacts(connection: DuckDBConnection, runId: string, facts: RunFacts): Promise<void> {
  const entries = Object.entries(facts).filter(([, v]) => v !== undefined) as [keyof RunFacts, unknown][];
  if (entries.length === 0) return;
  const sets = entries.map(([k]) => `${FACT_COLUMNS[k]} = $${k}`).join(', ');
  const params = Object.fromEntries(entries.map(([k, v]) => [k, v as string | number | boolean | null]));
  await connection.run(`UPDATE sync_runs SET ${sets} WHERE run_id = $run`, { ...params, run: runId });
}

/**
 * Marks a run finished with its outcome and, for failures, the error as JSON (no secrets). `finished_at` is
 * the clock's time when this is called (the end of the run's work; DuckDB's `now()` would be the start of
 * the transaction, before the merge), and not before `notBefore` (a merged run's merge time: its versions'
 * `valid_from`), which is also recorded as `merged_at` (merge-time.ts).
 */
export async function finishRun(
  connection: DuckDBConnection,
  runId: string,
  status: Exclude<RunStatus, 'running'>,
  error?: Record<string, unknown>,
  notBefore?: Date,
): Promise<void> {
  await connection.run(
    `UPDATE sync_runs SET status = $status, finished_at = greatest($now::TIMESTAMPTZ, $notBefore::TIMESTAMPTZ),
       merged_at = $merged::TIMESTAMPTZ,
       error = $error::JSON WHERE run_id = $run`,
    {
      run: runId,
      status,
      error: error ? redactSecrets(JSON.stringify(error)) : null,
      now: new Date().toISOString(),
      notBefore: (notBefore ?? new Date(0)).toISOString(),
      merged: notBefore === undefined ? null : notBefore.toISOString(),
    },
  );
}

/**
 * Runs left `running` by a process that died (SIGKILL, power loss) are marked `aborted` at the next start
 * (error code `RUN_INTERRUPTED`). Their staging rows and checkpoints are dropped, except for runs of a
 * paged export (a checkpoint with a `page`): those are kept so the next run of that export can resume
 * from the page after the last checkpoint (see src/sync/resume-run.ts, which also drops them when it
 * cannot resume). Runs in `keepRunIds` are left alone. Returns the run ids that were closed.
 */
export async function closeStaleRuns(
  connection: DuckDBConnection,
  keepRunIds: string[] = [],
): Promise<string[]> {
  const rows = (
    await connection.runAndReadAll(
      `SELECT run_id, EXISTS (SELECT 1 FROM sync_checkpoints k WHERE k.run_id = r.run_id AND k.page IS NOT NULL) AS paged
       FROM sync_runs r WHERE status = 'running'`,
    )
  ).getRowObjectsJS();
  const stale = rows
    .map((r) => ({ runId: String(r.run_id), keep: r.paged === true }))
    .filter((r) => !keepRunIds.includes(r.runId));
  for (const { runId, keep } of stale) {
    await withTransaction(connection, async (c) => {
      await c.run(
        `UPDATE sync_runs SET status = 'aborted', finished_at = now(),
           error = '{"code":"RUN_INTERRUPTED","message":"the process ended before the run finished"}'::JSON
         WHERE run_id = $run`,
        { run: runId },
      );
      if (!keep) await dropRunStaging(c, runId);
    });
  }
  await dropFinishedStaging(connection);
  return stale.map((s) => s.runId);
}

/**
 * Removes the staging rows and checkpoints of runs that succeeded or failed: a run clears them after its
 * outcome is committed, in a transaction of its own (merge.ts, `clearStaging`), so a process killed in
 * between leaves them behind. No run reads them (only an aborted paged run's are resumed).
 */
async function dropFinishedStaging(connection: DuckDBConnection): Promise<void> {
  const finished = `SELECT run_id FROM sync_runs WHERE status IN ('succeeded', 'failed')`;
  await withTransaction(connection, async (c) => {
    for (const table of ['staging_reports', 'staging_seen', 'sync_checkpoints']) {
      await c.run(`DELETE FROM ${table} WHERE run_id IN (${finished})`);
    }
  });
}
