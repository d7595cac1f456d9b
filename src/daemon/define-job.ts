/**
 * One scheduled job as declared in `jobs/<name>.ts`: a line of a crontab, no logic
 * (docs/deployment.md). The daemon (`reports-sync run`) schedules it with node-cron and runs it through
 * `syncTarget`.
 */
export interface JobDeclaration {
  /** Stable name, kebab-case (`sync-ndjson`): `sync_runs.job`, log field `job`, and the env override
   * `REPORTS_SCHEDULE_<NAME>` (`REPORTS_SCHEDULE_SYNC_NDJSON`). */
  name: string;
  /** node-cron expression, 5 fields (minute precision) or 6 (with seconds), in the time zone `REPORTS_TZ`. */
  schedule: string;
  /** What it runs: a target of `reports-sync sync --source` (`ndjson`, `stats`, `csv`). */
  target: string;
  /** One line for `status` and the logs. */
  description: string;
  /**
   * Position among the jobs (lower first): the order of the catch-up runs at start and of `status`. Jobs
   * without one come after, in file-name order. The full exports come before the stats snapshot, so a
   * fresh warehouse is loaded before its counters are compared with the upstream's.
   */
  order?: number;
  /**
   * Freshness objective (ms): the daemon raises `freshness.breached` when the job has had no successful
   * run for longer (docs/deployment.md, "Alerts"). Default: twice its schedule's period. The environment
   * overrides it (`REPORTS_FRESHNESS_<NAME>`, ms or `off`).
   */
  freshnessMs?: number;
}

/**
 * Identity function that types a job declaration (the default export of a file in `jobs/`).
 *
 * @example
 * export default defineJob({ name: 'sync-ndjson', schedule: '0 2 * * *', target: 'ndjson', description: 'nightly NDJSON export' });
 */
export function defineJob(job: JobDeclaration): JobDeclaration {
  return job;
}
