import { existsSync, statSync } from 'node:fs';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Config } from '../config/config.js';
import { nextRuns } from '../daemon/cron-times.js';
import { lastRunsByJob } from '../daemon/last-runs.js';
import type { Job } from '../daemon/load-jobs.js';
import { formatAge } from '../util/format-age.js';
import { wrapToWidth } from '../util/screen.js';
import { openForReading } from '../warehouse/open-for-reading.js';
import { publishedPathFor } from '../warehouse/open-migrated.js';
import { publishedDirFor } from '../warehouse/publish.js';
import { readPublishRecord } from '../warehouse/postgres/publish-record.js';
import { readPostgresLag } from '../alerts/postgres-lag.js';
import { formatTable, type TableOptions } from './format-table.js';

type Row = Record<string, unknown>;

/** Everything `reports-sync status` shows; `status --json` prints it as it is. */
export interface StatusReport {
  warehouse: {
    path: string;
    copy: 'live' | 'published';
    livePath: string;
    heldBy?: string;
    publishedAt?: string;
  };
  timezone: string;
  schedule: {
    job: string;
    schedule: string;
    scheduleFrom: string;
    target: string;
    nextRun?: string;
    disabledReason?: string;
    lastRun?: string;
    lastStatus?: string;
    lastSuccess?: string;
  }[];
  published: { path: string; parquet: string; writtenAt: string } | null;
  /**
   * The PostgreSQL publish (REPORTS_POSTGRES_URL), null when none is configured: the run it holds last,
   * finished runs it does not hold yet and how long the first change it misses has waited (s), the last
   * success and attempt (ISO 8601), and the last attempt's error (null when it succeeded).
   */
  postgres: {
    schema: string;
    lastRunId: string | null;
    runsBehind: number;
    secondsBehind: number;
    pendingSince: string | null;
    lastSuccessAt: string | null;
    lastAttemptAt: string | null;
    lastError: string | null;
  } | null;
  runs: Row[];
  /** Drift events of the last runs, newest first (at most 20; warehouse/drift.ts). */
  drift: Row[];
  /**
   * Current reports with impossible values, by data-quality rule (loaded and flagged, see
   * warehouse/quality-flags.ts): `{rule, reports}`, most first; empty when none (or the copy predates them).
   */
  qualityFlags: Row[];
  reportsByDestinationAndStatus: Row[];
  totals: Row;
}

/**
 * Reads the status of the warehouse (the published copy while another process holds the live file):
 * the job schedule with each job's last run and last success, the published snapshot, the last `runs`
 * runs, the schema drift of the last runs, the data-quality flags of current reports, current reports by
 * destination and status, and totals. Times are ISO 8601 (UTC).
 *
 * @throws SyncError `WAREHOUSE_MISSING` (exit 2), `WAREHOUSE_LOCKED`, `WAREHOUSE_OPEN` (see openForReading)
 */
export async function readStatus(config: Config, jobs: readonly Job[], runs: number): Promise<StatusReport> {
  const opened = await openForReading(config.warehouse);
  const { warehouse } = opened;
  try {
    const c = await warehouse.connect();
    try {
      const read = async (sql: string, params?: Record<string, number>) =>
        (await c.runAndReadAll(sql, params)).getRowObjectsJS().map(plain);
      // A copy written before data-quality flags existed (the published one of an older version) has none.
      const flags =
        (await read(`SELECT count(*) AS n FROM duckdb_views() WHERE view_name = 'current_quality_flags'`))[0]
          ?.n === 1;
      return {
        warehouse: {
          path: warehouse.path,
          copy: opened.copy,
          livePath: opened.livePath,
          ...(opened.heldBy ? { heldBy: opened.heldBy } : {}),
          ...(opened.publishedAt ? { publishedAt: opened.publishedAt.toISOString() } : {}),
        },
        timezone: config.timezone,
        schedule: await schedule(c, config, jobs),
        published: published(config),
        postgres: await postgresStatus(c, config, opened.livePath),
        runs: await read(
          `SELECT run_id, job, status, started_at AS started,
                  round(epoch(finished_at) - epoch(started_at), 2) AS seconds,
                  records_read AS "read",
                  -- A run that did not succeed merged nothing: its valid records were only staged.
                  CASE WHEN status = 'succeeded' THEN records_loaded ELSE 0 END AS loaded,
                  records_rejected AS rejected,
                  inserted, updated, unchanged, removed,${flags ? ' quality_flags AS flagged,' : ''}
                  error->>'message' AS error
           FROM sync_runs ORDER BY started_at DESC LIMIT $n`,
          { n: Math.max(1, runs) },
        ),
        drift: await read(
          `SELECT first_seen AS seen, run_id, source, kind, field, value, count
           FROM drift_events ORDER BY first_seen DESC, kind, field LIMIT 20`,
        ),
        qualityFlags: flags
          ? await read(
              `SELECT rule, count(*) AS reports FROM current_quality_flags GROUP BY rule ORDER BY reports DESC, rule`,
            )
          : [],
        reportsByDestinationAndStatus: await read(
          `SELECT destination, status, count(*) AS reports FROM reports WHERE removed_at IS NULL
           GROUP BY ALL ORDER BY destination, status`,
        ),
        totals:
          (
            await read(
              `SELECT count(*) FILTER (WHERE removed_at IS NULL) AS current, count(*) FILTER (WHERE removed_at IS NOT NULL) AS removed,
                      (SELECT count(*) FROM report_versions) AS versions, (SELECT count(*) FROM rejected_records) AS rejected_records
               FROM reports`,
            )
          )[0] ?? {},
      };
    } finally {
      c.closeSync();
    }
  } finally {
    warehouse.close();
  }
}

/** JSON-able values: BIGINT as a number (counts), timestamps as ISO strings. */
function plain(row: Row): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) {
    out[k] = typeof v === 'bigint' ? Number(v) : v instanceof Date ? v.toISOString() : v;
  }
  return out;
}

async function schedule(c: DuckDBConnection, config: Config, jobs: readonly Job[]) {
  const history = await lastRunsByJob(c);
  return jobs.map((job) => {
    const h = history.get(job.name);
    const next = job.enabled ? nextRuns(job.schedule, config.timezone, 1)[0] : undefined;
    return {
      job: job.name,
      schedule: job.schedule,
      scheduleFrom: job.scheduleFrom,
      target: job.target,
      ...(next ? { nextRun: next.toISOString() } : { disabledReason: job.disabledReason ?? 'disabled' }),
      ...(h?.lastStartedAt ? { lastRun: h.lastStartedAt.toISOString(), lastStatus: h.lastStatus } : {}),
      ...(h?.lastSuccessStartedAt ? { lastSuccess: h.lastSuccessStartedAt.toISOString() } : {}),
    };
  });
}

async function postgresStatus(
  c: DuckDBConnection,
  config: Config,
  livePath: string,
): Promise<StatusReport['postgres']> {
  if (config.postgresUrl === undefined) return null;
  const lag = await readPostgresLag(c, readPublishRecord(livePath), Date.now());
  return {
    schema: config.postgresSchema,
    lastRunId: lag.lastRunId,
    runsBehind: lag.runsBehind,
    secondsBehind: Math.round(lag.lagMs / 1000),
    pendingSince: lag.pendingSince?.toISOString() ?? null,
    lastSuccessAt: lag.publishedAt?.toISOString() ?? null,
    lastAttemptAt: lag.lastAttemptAt?.toISOString() ?? null,
    lastError: lag.lastError,
  };
}

/** The PostgreSQL lines of the status text. */
function postgresText(p: NonNullable<StatusReport['postgres']>, age: (iso: string) => string): string {
  const behind =
    p.runsBehind === 0
      ? 'up to date'
      : `${p.runsBehind} run${p.runsBehind === 1 ? '' : 's'} behind` +
        (p.pendingSince === null
          ? ' (no change among them)'
          : `, the first change waiting ${formatAge(p.secondsBehind * 1000)}`);
  const success =
    p.lastSuccessAt === null
      ? 'never published'
      : `last publish ${age(p.lastSuccessAt)} ago (run ${p.lastRunId})`;
  const error =
    p.lastError === null
      ? ''
      : `\n  Last attempt failed ${p.lastAttemptAt ? `${age(p.lastAttemptAt)} ago` : ''}: ${p.lastError}`;
  return `\nPostgreSQL (schema ${p.schema}): ${behind}; ${success}.${error}\n`;
}

function published(config: Config): StatusReport['published'] {
  const path = publishedPathFor(config.warehouse);
  if (!existsSync(path)) return null;
  return {
    path,
    parquet: `${publishedDirFor(config.warehouse)}/parquet`,
    writtenAt: statSync(path).mtime.toISOString(),
  };
}

/**
 * The text `reports-sync status` prints. Ages are relative to now (exact times are in `status --json`).
 * Read from the published copy, jobs without a run in it are "none in the copy", not "never": runs after
 * it was written are not in it.
 *
 * @param width the terminal's width in columns (lines wrap, tables fit); undefined: whole lines
 */
export function renderStatus(s: StatusReport, config: Config, width?: number): string {
  const now = Date.now();
  const age = (iso: string | undefined) => (iso ? formatAge(now - Date.parse(iso)) : 'unknown');
  const copy = s.warehouse.copy === 'published';
  const none = copy ? 'none in the copy' : 'never';
  const local = (iso: string) => new Date(iso).toLocaleString('sv-SE', { timeZone: s.timezone }).slice(0, 16);
  const table = (rows: Record<string, unknown>[], options: TableOptions = {}) =>
    formatTable(rows, { maxWidth: width, groupDigits: true, ...options });
  const out: string[] = [];
  if (!copy) {
    out.push(`Warehouse ${s.warehouse.path} (live)\n`);
  } else {
    out.push(
      `Warehouse: the published copy ${s.warehouse.path}, written ${age(s.warehouse.publishedAt)} ago: ` +
        `runs after that are not shown. The live warehouse ${s.warehouse.livePath} is in use by ` +
        `${s.warehouse.heldBy}.\n`,
    );
  }
  const rows = s.schedule.map((j) => ({
    job: j.job,
    schedule: j.schedule + (j.scheduleFrom === 'declaration' ? '' : ` (${j.scheduleFrom})`),
    'next run': j.nextRun
      ? `in ${formatAge(Date.parse(j.nextRun) - now)}, ${local(j.nextRun)}`
      : `disabled: ${j.disabledReason}`,
    'last run': j.lastRun ? `${j.lastStatus} ${age(j.lastRun)} ago` : none,
    'last success': j.lastSuccess ? `${age(j.lastSuccess)} ago` : none,
    target: j.target,
  }));
  out.push(
    `\nSchedule of reports-sync run (time zone ${config.timezone}):\n` +
      table(rows, { whole: new Set(['job']), dropFirst: ['target'] }),
  );
  out.push(
    s.published
      ? `\nPublished snapshot: ${s.published.path}, written ${age(s.published.writtenAt)} ago (Parquet: ${s.published.parquet})\n`
      : `\nPublished snapshot: none yet. reports-sync run publishes one to ${publishedPathFor(config.warehouse)} ` +
          'after its first successful job, then at most every REPORTS_PUBLISH_MIN_INTERVAL_MS when data changed; ' +
          'reports-sync serve publishes one as it starts.\n',
  );
  if (s.postgres !== null) out.push(postgresText(s.postgres, (iso) => age(iso)));
  // The run log's times are UTC, shown as stored; errors whole below the table, where they fit.
  const runs = s.runs.map(({ error: _error, ...r }) => ({
    ...r,
    started: typeof r.started === 'string' ? r.started.slice(0, 19).replace('T', ' ') : r.started,
  }));
  const errors = s.runs
    .filter((r) => typeof r.error === 'string')
    .map((r) => `  ${String(r.run_id)}: ${String(r.error)}\n`);
  out.push(
    `\nLast runs (UTC):\n${table(runs, {
      whole: new Set(['run_id']),
      dropFirst: ['job', 'started', 'unchanged', 'flagged', 'seconds', 'updated', 'loaded', 'removed'],
    })}` + (errors.length > 0 ? `Errors of these runs:\n${errors.join('')}` : ''),
  );
  const drift = s.drift.map((d) => ({
    ...d,
    seen: typeof d.seen === 'string' ? d.seen.slice(0, 19).replace('T', ' ') : d.seen,
  }));
  out.push(
    drift.length === 0
      ? '\nSchema drift: none seen\n'
      : `\nSchema drift of the last runs (newest first, REPORTS_SCHEMA_CONTRACT=${config.schemaContract}):\n${table(drift)}`,
  );
  out.push(
    s.qualityFlags.length === 0
      ? '\nData quality: no current report holds an impossible value\n'
      : `\nData quality: current reports with impossible values (loaded and flagged; see the view current_quality_flags):\n${table(s.qualityFlags)}`,
  );
  out.push(`\nCurrent reports by destination and status:\n${table(s.reportsByDestinationAndStatus)}`);
  out.push(`\nTotals:\n${table([s.totals])}`);
  return wrapToWidth(out.join(''), width);
}
