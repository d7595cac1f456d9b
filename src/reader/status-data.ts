import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { KNOWN_STATUSES } from '../schema/wire-format.js';
import { rejectReasons } from '../warehouse/reject-reasons.js';
import { withQueryTimeout } from './query-timeout.js';

/** One run of the run log as the status page lists it. Times are epoch ms; `durationMs` null while running. */
export interface StatusRun {
  runId: string;
  job: string;
  source: string;
  status: string;
  startedMs: number;
  durationMs: number | null;
  recordsRead: number;
  inserted: number;
  updated: number;
  removed: number;
  rejected: number;
}

/** What the status page shows, read in one read transaction (see {@link readStatusData}). */
export interface StatusData {
  /** Per job: its last successful run's finish (epoch ms), or null when it never succeeded. */
  jobs: Array<{ job: string; lastSuccessMs: number | null; lastStatus: string }>;
  /** The last 30 runs, newest first. */
  runs: StatusRun[];
  /** Reports by status at each of the last 30 successful runs (from `report_versions`), oldest first. */
  series: Array<{ atMs: number; counts: Record<string, number> }>;
  /**
   * Top reject reasons: the quarantine grouped by the field and issue code of each record's first issue
   * (warehouse/reject-reasons.ts), with a count, an example message and the latest location.
   */
  rejects: Array<{ reason: string; count: number; location: string; runId: string }>;
  /** The last comparison of the upstream `/stats` total with the warehouse (null before any). */
  drift: { atMs: number; upstream: number; warehouse: number; diff: number } | null;
  /** Status values outside the known lifecycle, and destinations that appeared after the first run. */
  unknown: Array<{ field: 'status' | 'destination'; value: string; count: number }>;
  /** Current reports with impossible values, by data-quality rule (loaded and flagged), most first. */
  quality: Array<{ rule: string; count: number }>;
  /** The charts: each job's last 30 finished runs, and the last 30 /stats comparisons, oldest first. */
  charts: {
    jobs: Array<{ job: string; runs: ChartRun[] }>;
    totals: Array<{ atMs: number; runId: string; upstream: number; warehouse: number }>;
  };
}

/** One finished run as the charts plot it. */
export interface ChartRun {
  runId: string;
  atMs: number;
  status: string;
  recordsRead: number;
  durationMs: number;
  rejected: number;
}

const num = (v: unknown) => (v === null || v === undefined ? 0 : Number(v));

/**
 * Reads {@link StatusData} with one query per section on `connection` (run it inside a read transaction
 * so the sections agree). Bounded work: the run log and rejects are aggregated, the chart samples the
 * SCD2 history at 30 points.
 *
 * @throws SyncError `READER_QUERY_TIMEOUT` when a query passes `timeoutMs`
 */
export async function readStatusData(connection: DuckDBConnection, timeoutMs: number): Promise<StatusData> {
  const rows = async (sql: string, params?: Record<string, DuckDBValue>) =>
    (
      await withQueryTimeout(connection, timeoutMs, 'The status page', () =>
        connection.runAndReadAll(sql, params),
      )
    ).getRows();

  const jobs = (
    await rows(`SELECT job,
        max(epoch_ms(finished_at)) FILTER (WHERE status = 'succeeded')::DOUBLE,
        arg_max(status, started_at)
      FROM sync_runs GROUP BY job ORDER BY job`)
  ).map((r) => ({
    job: String(r[0]),
    lastSuccessMs: r[1] === null ? null : num(r[1]),
    lastStatus: String(r[2]),
  }));

  const runs = (
    await rows(`SELECT run_id, job, source, status, epoch_ms(started_at)::DOUBLE,
        (epoch_ms(finished_at) - epoch_ms(started_at))::DOUBLE, records_read, inserted, updated, removed,
        records_rejected
      FROM sync_runs ORDER BY started_at DESC, run_id DESC LIMIT 30`)
  ).map((r): StatusRun => ({
    runId: String(r[0]),
    job: String(r[1]),
    source: String(r[2]),
    status: String(r[3]),
    startedMs: num(r[4]),
    durationMs: r[5] === null ? null : num(r[5]),
    recordsRead: num(r[6]),
    inserted: num(r[7]),
    updated: num(r[8]),
    removed: num(r[9]),
    rejected: num(r[10]),
  }));

  const points = await rows(`WITH t AS (
      SELECT DISTINCT finished_at AS ts FROM sync_runs
      WHERE status = 'succeeded' AND finished_at IS NOT NULL ORDER BY ts DESC LIMIT 30)
    SELECT epoch_ms(t.ts)::DOUBLE, v.status, count(*)::DOUBLE
    FROM t JOIN report_versions AS v
      ON v.valid_from <= t.ts AND (v.valid_to IS NULL OR v.valid_to > t.ts) AND v.change <> 'remove'
    GROUP BY ALL ORDER BY 1, 2`);
  const byTime = new Map<number, Record<string, number>>();
  for (const [at, status, count] of points) {
    // No prototype: a status named `__proto__` is a count like any other.
    const counts = byTime.get(num(at)) ?? (Object.create(null) as Record<string, number>);
    counts[String(status)] = num(count);
    byTime.set(num(at), counts);
  }
  const series = [...byTime].map(([atMs, counts]) => ({ atMs, counts }));

  // Grouped as the sync summary groups them (warehouse/reject-reasons.ts).
  const rejects = (
    await withQueryTimeout(connection, timeoutMs, 'The status page', () =>
      rejectReasons(connection, { limit: 10, locations: 1 }),
    )
  ).map((r) => ({ reason: r.reason, count: r.records, location: r.lastLocation, runId: r.lastRunId }));

  const [d] = await rows(`SELECT epoch_ms(finished_at)::DOUBLE, stats_total_upstream, stats_total_warehouse,
      stats_total_diff FROM sync_runs WHERE stats_total_upstream IS NOT NULL AND finished_at IS NOT NULL
      ORDER BY finished_at DESC LIMIT 1`);
  const drift = d ? { atMs: num(d[0]), upstream: num(d[1]), warehouse: num(d[2]), diff: num(d[3]) } : null;

  const known = KNOWN_STATUSES.map((s) => `'${s}'`).join(', ');
  const unknown = (
    await rows(`SELECT 'status', status, count(*)::DOUBLE FROM reports
        WHERE removed_at IS NULL AND status NOT IN (${known}) GROUP BY ALL
      UNION ALL
      SELECT 'destination', destination, count(*)::DOUBLE FROM report_versions GROUP BY ALL
        HAVING min(valid_from) > (SELECT min(valid_from) FROM report_versions)
      ORDER BY 1, 3 DESC, 2 LIMIT 40`)
  ).map((r) => ({ field: String(r[0]) as 'status' | 'destination', value: String(r[1]), count: num(r[2]) }));

  const quality = (
    await rows(`SELECT rule, count(*)::DOUBLE FROM current_quality_flags GROUP BY rule ORDER BY 2 DESC, 1`)
  ).map((r) => ({ rule: String(r[0]), count: num(r[1]) }));

  const perJob = await rows(`SELECT job, run_id, epoch_ms(started_at)::DOUBLE, status, records_read::DOUBLE,
      (epoch_ms(finished_at) - epoch_ms(started_at))::DOUBLE, records_rejected::DOUBLE
    FROM sync_runs WHERE finished_at IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY job ORDER BY started_at DESC, run_id DESC) <= 30
    ORDER BY job, started_at, run_id`);
  const byJob = new Map<string, ChartRun[]>();
  for (const r of perJob) {
    const list = byJob.get(String(r[0])) ?? [];
    list.push({
      runId: String(r[1]),
      atMs: num(r[2]),
      status: String(r[3]),
      recordsRead: num(r[4]),
      durationMs: num(r[5]),
      rejected: num(r[6]),
    });
    byJob.set(String(r[0]), list);
  }
  const totals = (
    await rows(`SELECT * FROM (SELECT epoch_ms(finished_at)::DOUBLE AS t, run_id, stats_total_upstream::DOUBLE,
        stats_total_warehouse::DOUBLE FROM sync_runs
      WHERE status = 'succeeded' AND stats_total_upstream IS NOT NULL AND finished_at IS NOT NULL
      ORDER BY finished_at DESC, run_id DESC LIMIT 30) ORDER BY t`)
  ).map((r) => ({ atMs: num(r[0]), runId: String(r[1]), upstream: num(r[2]), warehouse: num(r[3]) }));
  const charts = { jobs: [...byJob].map(([job, runs]) => ({ job, runs })), totals };

  return { jobs, runs, series, rejects, drift, unknown, quality, charts };
}
