import { escapeIdentifier, type ClientBase } from 'pg';
import { COUNTERS, runDetailOf, type RunDetail } from '../run-details.js';

const ms = (column: string) => `trunc(extract(epoch FROM ${column}) * 1000)::float8`;

/**
 * One run of the PostgreSQL serving schema's run log (published from `sync_runs`), for the run page its
 * status page links (`/runs/<run id>`): outcome, error, counters, the `/stats` comparison and drift, as the
 * DuckDB reader's page shows them (the same columns, run-details.ts `runDetailOf`). Rejects by reason,
 * data-quality flags and alerts are read from DuckDB only (the page of `reports-sync run` has them): empty
 * here. Undefined when the run log has no such run.
 */
export async function readPgRunDetail(
  client: ClientBase,
  schema: string,
  runId: string,
): Promise<RunDetail | undefined> {
  const s = escapeIdentifier(schema);
  const res = await client.query<Record<string, unknown>>(
    `SELECT run_id, job, source, status, ${ms('started_at')} AS started, ${ms('finished_at')} AS finished,
       ${ms('finished_at')} - ${ms('started_at')} AS duration, records_read::float8 AS records_read,
       (CASE WHEN status = 'succeeded' THEN records_loaded ELSE 0 END)::float8 AS loaded,
       records_rejected::float8 AS rejected, inserted::float8 AS inserted, updated::float8 AS updated,
       removed::float8 AS removed, coalesce(quality_flags, 0)::float8 AS flags,
       error->>'code' AS error_code, error->>'message' AS error_message, error::text AS error_json,
       upstream_url, attempts, bytes_read::float8 AS bytes_read, coalesce(bytes_wire, 0)::float8 AS bytes_wire,
       pages, complete, not_modified, tombstones_note, stats_total_upstream::float8 AS up,
       stats_total_warehouse::float8 AS wh, stats_total_diff::float8 AS diff,
       ${COUNTERS.map((k) => `coalesce(${k}, 0)::float8 AS ${k}`).join(', ')}
     FROM ${s}.sync_runs WHERE run_id = $1`,
    [runId],
  );
  const row = res.rows[0];
  if (row === undefined) return undefined;
  const drift = await client.query<Record<string, unknown>>(
    `SELECT kind, field, value, count::float8 AS n FROM ${s}.drift_events WHERE run_id = $1
     ORDER BY kind, field, value`,
    [runId],
  );
  return runDetailOf(row, { drift: drift.rows, rejects: [], qualityByRule: [], alerts: [] });
}
