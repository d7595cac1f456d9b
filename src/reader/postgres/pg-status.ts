import { escapeIdentifier, type ClientBase } from 'pg';
import type { ChartRun, StatusData, StatusRun } from '../status-data.js';

const num = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
const ms = (column: string) => `trunc(extract(epoch FROM ${column}) * 1000)::float8`;

/**
 * What the status page can show from the PostgreSQL serving schema (the run log is published there):
 * freshness per job, the last 30 runs and each job's run charts, and the last `/stats` comparison. The
 * sections read from DuckDB-only data (reports over time, reject reasons, unknown values, data quality)
 * stay empty: the status page of the process that syncs (`reports-sync run`) has them.
 */
export async function readPgStatusData(client: ClientBase, schema: string): Promise<StatusData> {
  const runsTable = `${escapeIdentifier(schema)}.sync_runs`;
  const jobs = await client.query<{ job: string; last_success_ms: number | null; last_status: string }>(
    `SELECT job, max(${ms('finished_at')}) FILTER (WHERE status = 'succeeded') AS last_success_ms,
       (array_agg(status ORDER BY started_at DESC))[1] AS last_status
     FROM ${runsTable} GROUP BY job ORDER BY job`,
  );
  const runs = await client.query<Record<string, unknown>>(
    `SELECT run_id, job, source, status, ${ms('started_at')} AS started_ms,
       ${ms('finished_at')} - ${ms('started_at')} AS duration_ms, records_read, inserted, updated, removed,
       records_rejected
     FROM ${runsTable} ORDER BY started_at DESC, run_id DESC LIMIT 30`,
  );
  const finished = await client.query<Record<string, unknown>>(
    `SELECT * FROM (
       SELECT job, run_id, ${ms('finished_at')} AS at_ms, status, records_read, records_rejected,
         ${ms('finished_at')} - ${ms('started_at')} AS duration_ms,
         row_number() OVER (PARTITION BY job ORDER BY finished_at DESC) AS n
       FROM ${runsTable} WHERE finished_at IS NOT NULL) r
     WHERE n <= 30 ORDER BY job, at_ms`,
  );
  const totals = await client.query<Record<string, unknown>>(
    `SELECT run_id, ${ms('finished_at')} AS at_ms, stats_total_upstream AS up, stats_total_warehouse AS wh,
       stats_total_diff AS diff
     FROM ${runsTable} WHERE status = 'succeeded' AND stats_total_diff IS NOT NULL AND finished_at IS NOT NULL
     ORDER BY finished_at DESC LIMIT 30`,
  );
  const chartJobs = new Map<string, ChartRun[]>();
  for (const r of finished.rows) {
    const list = chartJobs.get(String(r.job)) ?? [];
    list.push({
      runId: String(r.run_id),
      atMs: num(r.at_ms),
      status: String(r.status),
      recordsRead: num(r.records_read),
      durationMs: num(r.duration_ms),
      rejected: num(r.records_rejected),
    });
    chartJobs.set(String(r.job), list);
  }
  const latest = totals.rows[0];
  return {
    jobs: jobs.rows.map((j) => ({ job: j.job, lastSuccessMs: j.last_success_ms, lastStatus: j.last_status })),
    runs: runs.rows.map(toStatusRun),
    series: [],
    rejects: [],
    drift: latest
      ? {
          atMs: num(latest.at_ms),
          upstream: num(latest.up),
          warehouse: num(latest.wh),
          diff: num(latest.diff),
        }
      : null,
    unknown: [],
    quality: [],
    charts: {
      jobs: [...chartJobs].map(([job, list]) => ({ job, runs: list })),
      totals: totals.rows
        .map((t) => ({
          atMs: num(t.at_ms),
          runId: String(t.run_id),
          upstream: num(t.up),
          warehouse: num(t.wh),
        }))
        .reverse(),
    },
  };
}

function toStatusRun(r: Record<string, unknown>): StatusRun {
  return {
    runId: String(r.run_id),
    job: String(r.job),
    source: String(r.source),
    status: String(r.status),
    startedMs: num(r.started_ms),
    durationMs: r.duration_ms === null ? null : num(r.duration_ms),
    recordsRead: num(r.records_read),
    inserted: num(r.inserted),
    updated: num(r.updated),
    removed: num(r.removed),
    rejected: num(r.records_rejected),
  };
}
