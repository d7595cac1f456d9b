import { Gauge, type Registry } from 'prom-client';
import type { PublishLag } from '../alerts/watch-rules.js';
import { nextRuns } from './cron-times.js';
import type { RunningJob } from './job-queue.js';
import type { Job } from './load-jobs.js';

/** What the daemon exposes about its jobs, read at scrape time. */
export interface DaemonInfo {
  jobs: readonly Job[];
  timezone: string;
  running(): RunningJob | undefined;
  pending(): string[];
  /** Freshness objective per watched job (ms), see `freshnessObjectiveMs`. */
  freshnessObjectives?(): ReadonlyMap<string, number>;
  /** The lag of each publish target at the watchdog's last check. */
  publishLags?(): ReadonlyMap<string, PublishLag>;
  /** Jobs whose last run failed without a run log row (a full disk: alerts/unrecorded-runs.ts). */
  unrecordedFailures?(): ReadonlySet<string>;
}

/**
 * Registers the daemon's job gauges on `registry` (prom-client; values are computed at scrape time):
 * - `reports_sync_job_running{job}`: 1 while the job runs, else 0;
 * - `reports_sync_job_queued{job}`: 1 while it waits behind another job, else 0;
 * - `reports_sync_job_next_run_timestamp_seconds{job}`: Unix time (s) of its next scheduled run (enabled jobs).
 * - `reports_sync_job_freshness_objective_seconds{job}`: the job's freshness objective (s): the rule
 *   "job stale" compares the age of its last success with it (deploy/prometheus/alerts.yml);
 * - `reports_sync_publish_lag_seconds{target}`: how long the first change a publish target misses has been
 *   committed (s; 0 when it holds every change), at the watchdog's last check;
 * - `reports_sync_publish_lag_runs{target}`: finished runs the target does not hold yet (PostgreSQL);
 * - `reports_sync_publish_last_attempt_failed{target}`: 1 when the target's last publish attempt failed
 *   (PostgreSQL down or refusing; the error is in the log and in `reports-sync status`), else 0;
 * - `reports_sync_job_failure_unrecorded{job}`: 1 when the job's last run failed and the warehouse could not
 *   record it (a full disk: the run log, and `reports_sync_last_run_success` with it, still shows the run
 *   before), else 0; the rule "run failing" reads both.
 * Together with the run-log metrics of `/metrics` they tell an operator what the daemon does now.
 */
export function registerDaemonMetrics(registry: Registry, info: DaemonInfo): void {
  const registers = [registry];
  new Gauge({
    name: 'reports_sync_job_running',
    help: 'Whether the job is running now (1) or not (0).',
    labelNames: ['job'],
    registers,
    collect() {
      const running = info.running()?.job.name;
      for (const job of info.jobs) this.set({ job: job.name }, job.name === running ? 1 : 0);
    },
  });
  new Gauge({
    name: 'reports_sync_job_failure_unrecorded',
    help: 'Whether the job last failed without the warehouse recording it (1: a full disk?) or not (0).',
    labelNames: ['job'],
    registers,
    collect() {
      const failed = info.unrecordedFailures?.() ?? new Set<string>();
      for (const job of info.jobs) this.set({ job: job.name }, failed.has(job.name) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'reports_sync_job_queued',
    help: 'Whether the job waits in the queue behind another one (1) or not (0).',
    labelNames: ['job'],
    registers,
    collect() {
      const pending = new Set(info.pending());
      for (const job of info.jobs) this.set({ job: job.name }, pending.has(job.name) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'reports_sync_job_next_run_timestamp_seconds',
    help: 'Unix time (s) of the next scheduled run of the job.',
    labelNames: ['job'],
    registers,
    collect() {
      for (const job of info.jobs) {
        if (!job.enabled) continue;
        const next = nextRuns(job.schedule, info.timezone, 1)[0];
        if (next) this.set({ job: job.name }, Math.floor(next.getTime() / 1000));
      }
    },
  });
  new Gauge({
    name: 'reports_sync_job_freshness_objective_seconds',
    help: 'Freshness objective of the job (s): its last success should be younger (default twice its schedule period).',
    labelNames: ['job'],
    registers,
    collect() {
      for (const [job, ms] of info.freshnessObjectives?.() ?? []) this.set({ job }, ms / 1000);
    },
  });
  new Gauge({
    name: 'reports_sync_publish_lag_seconds',
    help: 'Time (s) since the first committed change a publish target does not hold yet; 0 when it holds them all.',
    labelNames: ['target'],
    registers,
    collect() {
      this.reset();
      for (const [target, lag] of info.publishLags?.() ?? []) this.set({ target }, lag.lagMs / 1000);
    },
  });
  new Gauge({
    name: 'reports_sync_publish_lag_runs',
    help: 'Finished runs a publish target does not hold yet (targets that count them: postgres).',
    labelNames: ['target'],
    registers,
    collect() {
      this.reset();
      for (const [target, lag] of info.publishLags?.() ?? []) {
        if (lag.runsBehind !== undefined) this.set({ target }, lag.runsBehind);
      }
    },
  });
  new Gauge({
    name: 'reports_sync_publish_last_attempt_failed',
    help: 'Whether the last publish attempt of the target failed (1) or not (0) (targets that record it: postgres).',
    labelNames: ['target'],
    registers,
    collect() {
      this.reset();
      for (const [target, lag] of info.publishLags?.() ?? []) {
        if (lag.lastError !== undefined) this.set({ target }, lag.lastError === null ? 0 : 1);
      }
    },
  });
}
