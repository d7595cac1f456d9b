import { Gauge, type Registry } from 'prom-client';
import { nextRuns } from './cron-times.js';
import type { RunningJob } from './job-queue.js';
import type { Job } from './load-jobs.js';

/** What the daemon exposes about its jobs, read at scrape time. */
export interface DaemonInfo {
  jobs: readonly Job[];
  timezone: string;
  running(): RunningJob | undefined;
  pending(): string[];
}

/**
 * Registers the daemon's job gauges on `registry` (prom-client; values are computed at scrape time):
 * - `reports_sync_job_running{job}`: 1 while the job runs, else 0;
 * - `reports_sync_job_queued{job}`: 1 while it waits behind another job, else 0;
 * - `reports_sync_job_next_run_timestamp_seconds{job}`: Unix time (s) of its next scheduled run (enabled jobs).
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
}
