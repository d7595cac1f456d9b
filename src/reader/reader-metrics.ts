import type { DuckDBConnection } from '@duckdb/node-api';
import { duckdbApi } from '../warehouse/duckdb-api.js';
import { Counter, Gauge, Histogram, collectDefaultMetrics, Registry } from 'prom-client';
import { packageVersion } from '../util/version.js';
import type { DriftKind } from '../warehouse/drift.js';
import { withQueryTimeout } from './query-timeout.js';

/** Record kinds of a run exported by `reports_sync_last_run_records` (columns of `sync_runs`). */
const RECORD_KINDS = {
  read: 'records_read',
  loaded: 'records_loaded',
  rejected: 'records_rejected',
  duplicates: 'duplicates',
  inserted: 'inserted',
  updated: 'updated',
  unchanged: 'unchanged',
  removed: 'removed',
  revived: 'revived',
} as const;

/** Every drift kind, exported at 0 until one happens (so a rate() over it starts from a sample). */
const DRIFT_KINDS: readonly DriftKind[] = ['new_value', 'new_field', 'type_changed', 'field_gone'];

/**
 * The reader's Prometheus metrics (docs/reader.md; prom-client), named by the Prometheus conventions (base
 * units in the name, counters ending in `_total`, no label whose value changes with an outcome on a
 * gauge). Warehouse figures are read from the run log (`sync_runs`), `reports` and `rejected_records` at
 * scrape time, so they are right whichever process ran the jobs:
 *
 * - `reports_sync_build_info{version,node,duckdb}`: always 1, the versions in its labels;
 * - `reports_sync_last_success_timestamp_seconds{job}`: when the job's last successful run committed (s);
 * - `reports_sync_last_run_success{job}`: 1 when the job's last finished run succeeded, else 0 (for alerts;
 *   a run `aborted` by a shutdown is no outcome of the job and is passed over; one a killed process left,
 *   `RUN_INTERRUPTED` (an out-of-memory kill), counts as failed);
 * - `reports_sync_last_run_duration_seconds{job}`: duration of each job's last finished run (s);
 * - `reports_sync_last_run_records{job,kind}`: records read/loaded/rejected/inserted/… by that run;
 * - `reports_sync_runs_total{job,status}`: finished runs in the run log (a counter: the run log only grows);
 * - `reports_sync_reports{state}`: rows of `reports`, `current` or `removed` (tombstoned);
 * - `reports_sync_rejected_records`: rows of `rejected_records` (quarantined records of every run);
 * - `reports_sync_drift_events_total{kind}`: schema drift events in `drift_events` by kind (a counter: the
 *   table only grows);
 * - `reports_sync_stats_reports{source}`: the upstream `/stats` total and the warehouse's at the last
 *   comparison (`upstream`, `warehouse`), and `reports_sync_stats_total_difference`, upstream minus
 *   warehouse (the rule "reconciliation gap" watches it);
 * - `reports_sync_alerts_open{type}`: open alert incidents by the type that opened them (alert_events);
 * - `reports_sync_http_request_duration_seconds{method,route,status_code}`: reader requests (histogram);
 * - prom-client's default process metrics when the registry is the reader's own.
 */
export class ReaderMetrics {
  readonly registry: Registry;
  readonly #lastSuccess: Gauge<'job'>;
  readonly #lastSuccessful: Gauge<'job'>;
  readonly #lastDuration: Gauge<'job'>;
  readonly #lastRecords: Gauge<'job' | 'kind'>;
  readonly #runs: Counter<'job' | 'status'>;
  readonly #reports: Gauge<'state'>;
  readonly #rejected: Gauge;
  readonly #drift: Counter<'kind'>;
  readonly #statsTotal: Gauge<'source'>;
  readonly #statsDiff: Gauge;
  readonly #alertsOpen: Gauge<'type'>;
  readonly #http: Histogram<'method' | 'route' | 'status_code'>;

  /** @param registry where to register (the daemon passes its own); default: a new one with process metrics */
  constructor(registry?: Registry) {
    this.registry = registry ?? new Registry();
    if (registry === undefined) collectProcessMetrics(this.registry);
    const registers = [this.registry];
    new Gauge({
      name: 'reports_sync_build_info',
      help: 'Always 1; the reports-sync, Node.js and DuckDB versions are its labels.',
      labelNames: ['version', 'node', 'duckdb'],
      registers,
    }).set({ version: packageVersion(), node: process.versions.node, duckdb: duckdbApi.version() }, 1);
    this.#lastSuccess = new Gauge({
      name: 'reports_sync_last_success_timestamp_seconds',
      help: 'Unix time (s) when the last successful run of the job committed (sync_runs).',
      labelNames: ['job'],
      registers,
    });
    this.#lastSuccessful = new Gauge({
      name: 'reports_sync_last_run_success',
      help: 'Whether the last finished run of the job succeeded (1) or not (0), runs aborted by a shutdown passed over (sync_runs).',
      labelNames: ['job'],
      registers,
    });
    this.#lastDuration = new Gauge({
      name: 'reports_sync_last_run_duration_seconds',
      help: 'Duration (s) of the last finished run of the job (sync_runs).',
      labelNames: ['job'],
      registers,
    });
    this.#lastRecords = new Gauge({
      name: 'reports_sync_last_run_records',
      help: 'Records of the last finished run of the job by kind: read, loaded, rejected, inserted, updated, … (sync_runs).',
      labelNames: ['job', 'kind'],
      registers,
    });
    this.#runs = new Counter({
      name: 'reports_sync_runs_total',
      help: 'Runs in the run log by job and outcome (sync_runs).',
      labelNames: ['job', 'status'],
      registers,
    });
    this.#reports = new Gauge({
      name: 'reports_sync_reports',
      help: 'Rows of the reports table: current ones and removed (tombstoned) ones.',
      labelNames: ['state'],
      registers,
    });
    this.#rejected = new Gauge({
      name: 'reports_sync_rejected_records',
      help: 'Quarantined records kept in rejected_records, over all runs.',
      registers,
    });
    this.#drift = new Counter({
      name: 'reports_sync_drift_events_total',
      help: 'Schema drift events recorded (drift_events) by kind: new_value, new_field, type_changed, field_gone.',
      labelNames: ['kind'],
      registers,
    });
    this.#statsTotal = new Gauge({
      name: 'reports_sync_stats_reports',
      help: 'Reports counted at the last /stats comparison: the upstream /stats total and the warehouse total (sync_runs).',
      labelNames: ['source'],
      registers,
    });
    this.#statsDiff = new Gauge({
      name: 'reports_sync_stats_total_difference',
      help: 'Upstream /stats total minus warehouse total at the last comparison (sync_runs.stats_total_diff).',
      registers,
    });
    this.#alertsOpen = new Gauge({
      name: 'reports_sync_alerts_open',
      help: 'Open alert incidents by the type that opened them (alert_events).',
      labelNames: ['type'],
      registers,
    });
    this.#http = new Histogram({
      name: 'reports_sync_http_request_duration_seconds',
      help: 'Duration (s) of reader HTTP requests until the response finished.',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
  }

  /** Records one finished HTTP request; `route` is the route pattern (`unmatched` for a 404). */
  observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
    this.#http.observe({ method, route, status_code: String(statusCode) }, seconds);
  }

  /**
   * Re-reads the warehouse figures (a few small queries) into the gauges; call right before rendering.
   * @throws SyncError `READER_QUERY_TIMEOUT` past `timeoutMs`; DuckDB errors as they are
   */
  async refresh(connection: DuckDBConnection, timeoutMs: number): Promise<void> {
    const read = async (sql: string) =>
      (
        await withQueryTimeout(connection, timeoutMs, 'The metrics queries', () =>
          connection.runAndReadAll(sql),
        )
      ).getRowObjectsJS();
    const lastSuccess = await read(
      `SELECT job, max(epoch_ms(finished_at))::DOUBLE / 1000 AS ts FROM sync_runs
       WHERE status = 'succeeded' AND finished_at IS NOT NULL GROUP BY job`,
    );
    const lastRuns = await read(
      `SELECT job, status, (epoch_ms(finished_at) - epoch_ms(started_at))::DOUBLE / 1000 AS seconds,
              ${Object.entries(RECORD_KINDS)
                .map(([kind, column]) => `${column}::DOUBLE AS ${kind}`)
                .join(', ')}
       FROM sync_runs
       WHERE finished_at IS NOT NULL AND (status <> 'aborted' OR json_extract_string(error, '$.code') = 'RUN_INTERRUPTED')
       QUALIFY row_number() OVER (PARTITION BY job ORDER BY finished_at DESC, run_id DESC) = 1`,
    );
    // Outcomes only: a `running` series would vanish when its run ends, which a counter must not do.
    const runs = await read(
      `SELECT job, status, count(*)::DOUBLE AS n FROM sync_runs WHERE status <> 'running' GROUP BY job, status`,
    );
    const [reports] = await read(
      `SELECT count(*) FILTER (WHERE removed_at IS NULL)::DOUBLE AS current,
              count(*) FILTER (WHERE removed_at IS NOT NULL)::DOUBLE AS removed FROM reports`,
    );
    const [rejected] = await read(`SELECT count(*)::DOUBLE AS n FROM rejected_records`);
    const drift = await read(`SELECT kind, count(*)::DOUBLE AS n FROM drift_events GROUP BY kind`);
    const [stats] = await read(
      `SELECT stats_total_upstream::DOUBLE AS up, stats_total_warehouse::DOUBLE AS wh, stats_total_diff::DOUBLE AS diff
       FROM sync_runs WHERE status = 'succeeded' AND stats_total_diff IS NOT NULL AND finished_at IS NOT NULL
       ORDER BY finished_at DESC LIMIT 1`,
    );
    const alerts = await read(
      `SELECT type, count(*)::DOUBLE AS n FROM (
         SELECT arg_max(state, (raised_at, event_id)) AS state, arg_max(type, (raised_at, event_id)) AS type
         FROM alert_events WHERE state IN ('open', 'resolved') GROUP BY incident)
       WHERE state = 'open' GROUP BY type`,
    );

    this.#lastSuccess.reset();
    for (const r of lastSuccess) this.#lastSuccess.set({ job: String(r.job) }, Number(r.ts));
    this.#lastSuccessful.reset();
    this.#lastDuration.reset();
    this.#lastRecords.reset();
    for (const r of lastRuns) {
      const job = String(r.job);
      this.#lastSuccessful.set({ job }, r.status === 'succeeded' ? 1 : 0);
      this.#lastDuration.set({ job }, Number(r.seconds));
      for (const kind of Object.keys(RECORD_KINDS)) this.#lastRecords.set({ job, kind }, Number(r[kind]));
    }
    this.#runs.reset();
    for (const r of runs) this.#runs.inc({ job: String(r.job), status: String(r.status) }, Number(r.n));
    this.#reports.set({ state: 'current' }, Number(reports?.current ?? 0));
    this.#reports.set({ state: 'removed' }, Number(reports?.removed ?? 0));
    this.#rejected.set(Number(rejected?.n ?? 0));
    // Read from the table at each scrape: reset, then the total (a counter whose source of truth is the table).
    this.#drift.reset();
    for (const kind of DRIFT_KINDS) this.#drift.inc({ kind }, 0);
    for (const r of drift) this.#drift.inc({ kind: String(r.kind) }, Number(r.n));
    this.#statsTotal.reset();
    this.#statsDiff.reset();
    if (stats) {
      this.#statsTotal.set({ source: 'upstream' }, Number(stats.up));
      this.#statsTotal.set({ source: 'warehouse' }, Number(stats.wh));
      this.#statsDiff.set(Number(stats.diff));
    }
    this.#alertsOpen.reset();
    for (const type of ['run.failed', 'freshness.breached', 'reconciliation.gap', 'publish.lagging']) {
      this.#alertsOpen.set({ type }, 0);
    }
    for (const r of alerts) this.#alertsOpen.set({ type: String(r.type) }, Number(r.n));
  }
}

/**
 * prom-client's default process and Node.js metrics, less the three gauges it names with a counter's
 * `_total` suffix (`nodejs_active_{handles,requests,resources}_total`), which `promtool check metrics`
 * refuses; their per-type series `nodejs_active_handles{type}`, … stay.
 */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of [
    'nodejs_active_handles_total',
    'nodejs_active_requests_total',
    'nodejs_active_resources_total',
  ])
    registry.removeSingleMetric(name);
}
