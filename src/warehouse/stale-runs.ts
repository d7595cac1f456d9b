import type { DuckDBConnection } from '@duckdb/node-api';
import { RunLog } from './runs.js';
import { dropRunStaging, withTransaction } from './transaction.js';

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
      await RunLog.markInterrupted(c, runId);
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
