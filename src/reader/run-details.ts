import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { AlertEvent } from '../alerts/alert-event.js';
import { eventsOfRun } from '../alerts/alert-store.js';
import type { DriftEvent } from '../warehouse/drift.js';
import { runQualityFlags } from '../warehouse/quality-flags.js';
import { rejectReasons, type RejectReason } from '../warehouse/reject-reasons.js';

/** One run of the run log, as the run list (status page, `reports-sync runs`) shows it. Times are ISO 8601. */
export interface RunRow {
  runId: string;
  job: string;
  source: string;
  status: string;
  startedAt: string;
  finishedAt: string | null;
  /** null while it runs. */
  durationMs: number | null;
  recordsRead: number;
  /** Merged records: 0 for a run that did not succeed (it merged nothing). */
  recordsLoaded: number;
  recordsRejected: number;
  inserted: number;
  updated: number;
  removed: number;
  qualityFlags: number;
  errorCode: string | null;
  errorMessage: string | null;
}

/** Everything known of one run: the run page (`/runs/<run id>`) and `reports-sync runs show`. */
export interface RunDetail extends RunRow {
  upstreamUrl: string | null;
  attempts: number;
  counters: Record<string, number>;
  bytesRead: number;
  bytesWire: number;
  pages: number;
  complete: boolean | null;
  notModified: boolean | null;
  tombstonesNote: string | null;
  stats: { upstreamTotal: number | null; warehouseTotal: number; difference: number | null } | null;
  error: Record<string, unknown> | null;
  /** Its rejects grouped by path and issue code (warehouse/reject-reasons.ts) with a few raw examples. */
  rejects: RejectReason[];
  drift: DriftEvent[];
  /** Data-quality flags of the versions it wrote, by rule. */
  qualityByRule: { rule: string; reports: number }[];
  /** Alert events it raised (empty in a copy older than alerts). */
  alerts: AlertEvent[];
}

/** Filter of {@link readRunList}. */
export interface RunFilter {
  job?: string | undefined;
  /** Only runs that failed or were aborted. */
  failed?: boolean | undefined;
  /** At most this many, newest first (default 30). */
  limit?: number | undefined;
}

/** The counters a run detail carries besides the run list's (`RunDetail.counters`). */
export const COUNTERS = ['duplicates', 'unchanged', 'refined', 'revived', 'records_loaded'] as const;

const SELECT_RUN = `SELECT run_id, job, source, status, epoch_ms(started_at)::DOUBLE AS started, epoch_ms(finished_at)::DOUBLE AS finished,
  (epoch_ms(finished_at) - epoch_ms(started_at))::DOUBLE AS duration, records_read::DOUBLE AS records_read,
  (CASE WHEN status = 'succeeded' THEN records_loaded ELSE 0 END)::DOUBLE AS loaded,
  records_rejected::DOUBLE AS rejected, inserted::DOUBLE AS inserted, updated::DOUBLE AS updated,
  removed::DOUBLE AS removed, coalesce(quality_flags, 0)::DOUBLE AS flags,
  error->>'code' AS error_code, error->>'message' AS error_message`;

/** The last runs, newest first, filtered by job and outcome. */
export async function readRunList(c: DuckDBConnection, filter: RunFilter = {}): Promise<RunRow[]> {
  const where: string[] = [];
  const params: Record<string, DuckDBValue> = {};
  if (filter.job !== undefined) {
    where.push('job = $job');
    params.job = filter.job;
  }
  if (filter.failed) where.push(`status IN ('failed', 'aborted')`);
  const limit = Math.max(1, Math.floor(filter.limit ?? 30));
  const rows = (
    await c.runAndReadAll(
      `${SELECT_RUN} FROM sync_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY started_at DESC, run_id DESC LIMIT ${limit}`,
      params,
    )
  ).getRowObjectsJS();
  return rows.map(runRow);
}

/**
 * One run with its rejects (grouped, `examples` raw examples per group), drift, data-quality flags and
 * alert events; undefined when the run log has no such run.
 */
export async function readRunDetail(
  c: DuckDBConnection,
  runId: string,
  examples = 3,
): Promise<RunDetail | undefined> {
  const [row] = (
    await c.runAndReadAll(
      `${SELECT_RUN}, upstream_url, attempts, bytes_read::DOUBLE AS bytes_read,
         coalesce(bytes_wire, 0)::DOUBLE AS bytes_wire, pages, complete, not_modified, tombstones_note,
         stats_total_upstream::DOUBLE AS up, stats_total_warehouse::DOUBLE AS wh, stats_total_diff::DOUBLE AS diff,
         error::VARCHAR AS error_json, ${COUNTERS.map((k) => `coalesce(${k}, 0)::DOUBLE AS ${k}`).join(', ')}
       FROM sync_runs WHERE run_id = $run`,
      { run: runId },
    )
  ).getRowObjectsJS();
  if (!row) return undefined;
  const drift = (
    await c.runAndReadAll(
      `SELECT kind, field, value, count::DOUBLE AS n FROM drift_events WHERE run_id = $run ORDER BY kind, field, value`,
      { run: runId },
    )
  ).getRowObjectsJS();
  return runDetailOf(row, {
    drift,
    rejects: await rejectReasons(c, { runId, locations: 3, examples }),
    qualityByRule: await runQualityFlags(c, runId),
    alerts: (await hasTable(c, 'alert_events')) ? await eventsOfRun(c, runId) : [],
  });
}

/**
 * A {@link RunDetail} of one `sync_runs` row read with the columns {@link readRunDetail} names (on DuckDB, or
 * the published run log on PostgreSQL): `run_id` … `error_message` as the run list, `upstream_url`,
 * `attempts`, `bytes_read`, `bytes_wire`, `pages`, `complete`, `not_modified`, `tombstones_note`, `up`,
 * `wh`, `diff` (the `/stats` totals), `error_json` (text) and the counters; `drift` rows as
 * `{kind, field, value, n}`.
 */
export function runDetailOf(
  row: Record<string, unknown>,
  more: Pick<RunDetail, 'rejects' | 'qualityByRule' | 'alerts'> & { drift: Record<string, unknown>[] },
): RunDetail {
  const num = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
  return {
    ...runRow(row),
    upstreamUrl: row.upstream_url === null ? null : String(row.upstream_url),
    attempts: num(row.attempts),
    counters: Object.fromEntries(COUNTERS.map((k) => [k, num(row[k])])),
    bytesRead: num(row.bytes_read),
    bytesWire: num(row.bytes_wire),
    pages: num(row.pages),
    complete: row.complete === null ? null : row.complete === true,
    notModified: row.not_modified === null ? null : row.not_modified === true,
    tombstonesNote: row.tombstones_note === null ? null : String(row.tombstones_note),
    stats:
      row.wh === null
        ? null
        : {
            upstreamTotal: row.up === null ? null : num(row.up),
            warehouseTotal: num(row.wh),
            difference: row.diff === null ? null : num(row.diff),
          },
    error: row.error_json === null ? null : (JSON.parse(String(row.error_json)) as Record<string, unknown>),
    rejects: more.rejects,
    drift: more.drift.map((d) => ({
      kind: String(d.kind) as DriftEvent['kind'],
      field: String(d.field),
      value: d.value === null ? null : String(d.value),
      count: Number(d.n),
    })),
    qualityByRule: more.qualityByRule,
    alerts: more.alerts,
  };
}

/** Whether the database has `table` (a published copy written by an older version may not). */
export async function hasTable(c: DuckDBConnection, table: string): Promise<boolean> {
  const rows = await c.runAndReadAll(`SELECT 1 FROM duckdb_tables() WHERE table_name = $t`, { t: table });
  return rows.getRows().length > 0;
}

function runRow(r: Record<string, unknown>): RunRow {
  const num = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));
  return {
    runId: String(r.run_id),
    job: String(r.job),
    source: String(r.source),
    status: String(r.status),
    startedAt: isoOf(r.started)!,
    finishedAt: isoOf(r.finished),
    durationMs: r.duration === null ? null : num(r.duration),
    recordsRead: num(r.records_read),
    recordsLoaded: num(r.loaded),
    recordsRejected: num(r.rejected),
    inserted: num(r.inserted),
    updated: num(r.updated),
    removed: num(r.removed),
    qualityFlags: num(r.flags),
    errorCode: r.error_code === null ? null : String(r.error_code),
    errorMessage: r.error_message === null ? null : String(r.error_message),
  };
}

/** Epoch ms as ISO 8601 (UTC), null kept. */
function isoOf(v: unknown): string | null {
  return v === null || v === undefined ? null : new Date(Number(v)).toISOString();
}
