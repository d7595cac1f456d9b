import { existsSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import type { DuckDBConnection } from '@duckdb/node-api';
import { nextRuns } from '../daemon/cron-times.js';
import { lastRunsByJob } from '../daemon/last-runs.js';
import { loadJobs, type Job } from '../daemon/load-jobs.js';
import { formatAge } from '../util/format-age.js';
import { openForReading } from '../warehouse/open-for-reading.js';
import { publishedDirFor } from '../warehouse/publish.js';
import { publishedPathFor } from '../warehouse/open-migrated.js';
import type { Config } from '../config/config.js';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';
import { formatTable } from './format-table.js';

/**
 * `reports-sync status`: which copy it read, the schedule of `reports-sync run` (next run of each job,
 * its last run and last success), the age of the published snapshot, the last runs with their outcome,
 * current reports by destination and status, and totals. While the daemon holds the warehouse it reads
 * the published copy and says so (DESIGN.md §7).
 */
export function registerStatus(program: Command): void {
  withCommonOptions(
    program
      .command('status')
      .description(
        'Show the job schedule, the published snapshot, the last runs, row counts and rejects of the warehouse',
      ),
    { upstream: false },
  )
    .option('--runs <n>', 'how many recent runs to show', '10')
    .action(async (flags: CommonFlags & { runs: string }) => {
      const { config } = configFromFlags(flags);
      const jobs = await loadJobs();
      const opened = await openForReading(config.warehouse);
      const { warehouse } = opened;
      const out = process.stdout;
      try {
        const c = await warehouse.connect();
        try {
          if (opened.copy === 'live') {
            out.write(`Warehouse ${warehouse.path} (live)\n`);
          } else {
            out.write(
              `Warehouse: the published copy ${warehouse.path}, ${publishedAge(opened.publishedAt)} old\n` +
                `(the live warehouse ${opened.livePath} is in use by ${opened.heldBy}, e.g. reports-sync run; ` +
                `runs after that publish are not shown)\n`,
            );
          }
          await writeSchedule(c, config, jobs, out);
          writePublished(config, out);

          const runs = (
            await c.runAndReadAll(
              `SELECT run_id, job, status, strftime(started_at, '%Y-%m-%d %H:%M:%S') AS started,
                      round(epoch(finished_at) - epoch(started_at), 2) AS seconds,
                      records_read AS "read", records_loaded AS loaded, records_rejected AS rejected,
                      inserted, updated, unchanged, removed, error->>'message' AS error
               FROM sync_runs ORDER BY started_at DESC LIMIT $n`,
              { n: Math.max(1, Number(flags.runs) || 10) },
            )
          ).getRowObjectsJson();
          out.write(`\nLast runs:\n${formatTable(runs)}`);
          const drift = (
            await c.runAndReadAll(
              `SELECT strftime(first_seen, '%Y-%m-%d %H:%M:%S') AS seen, run_id, source, kind, field, value, count
               FROM drift_events ORDER BY first_seen DESC, kind, field LIMIT 20`,
            )
          ).getRowObjectsJson();
          out.write(
            drift.length === 0
              ? '\nSchema drift: none seen\n'
              : `\nSchema drift of the last runs (newest first, REPORTS_SCHEMA_CONTRACT=${config.schemaContract}):\n${formatTable(drift)}`,
          );
          const counts = (
            await c.runAndReadAll(
              `SELECT destination, status, count(*) AS reports FROM reports WHERE removed_at IS NULL
               GROUP BY ALL ORDER BY destination, status`,
            )
          ).getRowObjectsJson();
          out.write(`\nCurrent reports by destination and status:\n${formatTable(counts)}`);
          const totals = (
            await c.runAndReadAll(
              `SELECT count(*) FILTER (WHERE removed_at IS NULL) AS current, count(*) FILTER (WHERE removed_at IS NOT NULL) AS removed,
                      (SELECT count(*) FROM report_versions) AS versions, (SELECT count(*) FROM rejected_records) AS rejected_records
               FROM reports`,
            )
          ).getRowObjectsJson();
          out.write(`\nTotals:\n${formatTable(totals)}`);
        } finally {
          c.closeSync();
        }
      } finally {
        warehouse.close();
      }
    });
}

async function writeSchedule(
  c: DuckDBConnection,
  config: Config,
  jobs: readonly Job[],
  out: NodeJS.WritableStream,
): Promise<void> {
  const history = await lastRunsByJob(c);
  const local = (d: Date | undefined) =>
    d ? d.toLocaleString('sv-SE', { timeZone: config.timezone }).slice(0, 16) : '';
  const rows = jobs.map((job) => {
    const h = history.get(job.name);
    const next = job.enabled ? nextRuns(job.schedule, config.timezone, 1)[0] : undefined;
    return {
      job: job.name,
      schedule: job.schedule + (job.scheduleFrom === 'declaration' ? '' : ` (${job.scheduleFrom})`),
      target: job.target,
      'next run': next
        ? `${local(next)} (in ${formatAge(next.getTime() - Date.now())})`
        : `disabled: ${job.disabledReason}`,
      'last run': h?.lastStartedAt ? `${local(h.lastStartedAt)} ${h.lastStatus}` : 'never',
      'last success': h?.lastSuccessStartedAt
        ? `${local(h.lastSuccessStartedAt)} (${formatAge(Date.now() - h.lastSuccessStartedAt.getTime())} ago)`
        : 'never',
    };
  });
  out.write(`\nSchedule of reports-sync run (time zone ${config.timezone}):\n${formatTable(rows)}`);
}

function writePublished(config: Config, out: NodeJS.WritableStream): void {
  const path = publishedPathFor(config.warehouse);
  if (!existsSync(path)) {
    out.write(
      `\nPublished snapshot: none yet (reports-sync run publishes one to ${path} after each successful job)\n`,
    );
    return;
  }
  out.write(
    `\nPublished snapshot: ${path}, ${publishedAge(statSync(path).mtime)} old ` +
      `(Parquet: ${publishedDirFor(config.warehouse)}/parquet)\n`,
  );
}

function publishedAge(at: Date | undefined): string {
  return at ? formatAge(Date.now() - at.getTime()) : 'unknown';
}
