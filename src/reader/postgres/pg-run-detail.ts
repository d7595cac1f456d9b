import { escapeIdentifier, type ClientBase } from 'pg';
import type { DriftEvent } from '../../warehouse/drift.js';
import type { RunDetail } from '../run-details.js';

const ms = (column: string) => `trunc(extract(epoch FROM ${column}) * 1000)::float8`;
const COUNTERS = ['duplicates', 'unchanged', 'refined', 'revived', 'records_loaded'] as const;

/**
 * One run of the PostgreSQL serving schema's run log (published from `sync_runs`), for the run page its
 * status page links (`/runs/<run id>`): outcome, error, counters, the `/stats` comparison and drift, as the
 * DuckDB reader's page shows them. Rejects by reason, data-quality flags and alerts are read from DuckDB
 * only (the page of `reports-sync run` has them): empty here. Undefined when the run log has no such run.
 */
export async function readPgRunDetail(
  client: ClientBase,
  schema: string,
  runId: string,
): Promise<RunDetail | undefined> {
  const s = escapeIdentifier(schema);
  const res = await client.query<Record<string, unknown>>(
    `SELECT run_id, job, source, status, ${ms('started_at')} AS started, ${ms('finished_at')} AS finished,
       records_read::float8 AS records_read,
       (CASE WHEN status = 'succeeded' THEN records_loaded ELSE 0 END)::float8 AS loaded,
       records_rejected::float8 AS rejected, inserted::float8 AS inserted, updated::float8 AS updated,
       removed::float8 AS removed, coalesce(quality_flags, 0)::float8 AS flags, error, upstream_url, attempts,
       bytes_read::float8 AS bytes_read, coalesce(bytes_wire, 0)::float8 AS bytes_wire, pages, complete,
       not_modified, tombstones_note, stats_total_upstream::float8 AS up, stats_total_warehouse::float8 AS wh,
       stats_total_diff::float8 AS diff, ${COUNTERS.map((k) => `coalesce(${k}, 0)::float8 AS ${k}`).join(', ')}
     FROM ${s}.sync_runs WHERE run_id = $1`,
    [runId],
  );
  const row = res.rows[0];
  if (row === undefined) return undefined;
  const drift = await client.query<{ kind: string; field: string; value: string | null; n: number }>(
    `SELECT kind, field, value, count::float8 AS n FROM ${s}.drift_events WHERE run_id = $1
     ORDER BY kind, field, value`,
    [runId],
  );
  const num = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
  const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
  const iso = (v: unknown) => (v === null || v === undefined ? null : new Date(Number(v)).toISOString());
  const error = (row.error ?? null) as Record<string, unknown> | null;
  return {
    runId: String(row.run_id),
    job: String(row.job),
    source: String(row.source),
    status: String(row.status),
    startedAt: iso(row.started)!,
    finishedAt: iso(row.finished),
    durationMs: row.finished === null ? null : num(row.finished) - num(row.started),
    recordsRead: num(row.records_read),
    recordsLoaded: num(row.loaded),
    recordsRejected: num(row.rejected),
    inserted: num(row.inserted),
    updated: num(row.updated),
    removed: num(row.removed),
    qualityFlags: num(row.flags),
    errorCode: text(error?.code),
    errorMessage: text(error?.message),
    upstreamUrl: text(row.upstream_url),
    attempts: num(row.attempts),
    counters: Object.fromEntries(COUNTERS.map((k) => [k, num(row[k])])),
    bytesRead: num(row.bytes_read),
    bytesWire: num(row.bytes_wire),
    pages: num(row.pages),
    complete: row.complete === null ? null : row.complete === true,
    notModified: row.not_modified === null ? null : row.not_modified === true,
    tombstonesNote: text(row.tombstones_note),
    stats:
      row.wh === null
        ? null
        : {
            upstreamTotal: row.up === null ? null : num(row.up),
            warehouseTotal: num(row.wh),
            difference: row.diff === null ? null : num(row.diff),
          },
    error,
    rejects: [],
    drift: drift.rows.map((d) => ({
      kind: d.kind as DriftEvent['kind'],
      field: d.field,
      value: d.value,
      count: Number(d.n),
    })),
    qualityByRule: [],
    alerts: [],
  };
}
