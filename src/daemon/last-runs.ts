import type { DuckDBConnection } from '@duckdb/node-api';
import { LAST_RESET_SQL } from '../warehouse/data-tables.js';

/** The last run and the last successful run of one job, from `sync_runs` (times are UTC instants). */
export interface JobRunHistory {
  job: string;
  lastStartedAt?: Date | undefined;
  lastStatus?: string | undefined;
  lastSuccessStartedAt?: Date | undefined;
  lastSuccessFinishedAt?: Date | undefined;
}

/**
 * Reads, per job name of `sync_runs.job`, the last run (any outcome) and the last successful one. A job
 * that ran several sources (target `default`) counts as succeeded when one of its runs did. A success
 * before the last full refresh (`reports-sync reset`) does not count: its data was emptied.
 */
export async function lastRunsByJob(connection: DuckDBConnection): Promise<Map<string, JobRunHistory>> {
  const rows = (
    await connection.runAndReadAll(
      `SELECT job,
              epoch_ms(max(started_at)) AS last_started,
              arg_max(status, started_at) AS last_status,
              epoch_ms(max(started_at) FILTER (WHERE status = 'succeeded' AND started_at > ${LAST_RESET_SQL})) AS success_started,
              epoch_ms(max(finished_at) FILTER (WHERE status = 'succeeded' AND started_at > ${LAST_RESET_SQL})) AS success_finished
       FROM sync_runs GROUP BY job`,
    )
  ).getRowObjectsJS();
  const date = (v: unknown) => (v === null || v === undefined ? undefined : new Date(Number(v)));
  return new Map(
    rows.map((r) => [
      String(r.job),
      {
        job: String(r.job),
        lastStartedAt: date(r.last_started),
        lastStatus: r.last_status === null ? undefined : String(r.last_status),
        lastSuccessStartedAt: date(r.success_started),
        lastSuccessFinishedAt: date(r.success_finished),
      },
    ]),
  );
}
