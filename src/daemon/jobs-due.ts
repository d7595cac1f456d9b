import type { JobRunHistory } from './last-runs.js';
import type { Job } from './load-jobs.js';
import { schedulePeriodMs } from './cron-times.js';

/** A job the daemon runs once at start, and why. */
export interface CatchUp {
  job: Job;
  /** Period of its schedule (ms), see `schedulePeriodMs`. */
  periodMs: number;
  /** Start of its last successful run; undefined when it never succeeded. */
  lastSuccessAt?: Date | undefined;
}

/**
 * The catch-up rule at start (docs/deployment.md): an enabled job whose last successful run started
 * more than one period ago (or that never succeeded) runs once now, so downtime over a scheduled time
 * does not leave the warehouse a whole period behind. The start time is used, not the end: a nightly
 * run that started at 02:00 yesterday is due at 02:00 today however long it took. In declaration order.
 */
export function jobsDueAtStart(
  jobs: readonly Job[],
  history: ReadonlyMap<string, JobRunHistory>,
  timezone: string,
  now: Date = new Date(),
): CatchUp[] {
  const due: CatchUp[] = [];
  for (const job of jobs) {
    if (!job.enabled) continue;
    const periodMs = schedulePeriodMs(job.schedule, timezone);
    const lastSuccessAt = history.get(job.name)?.lastSuccessStartedAt;
    if (!lastSuccessAt || now.getTime() - lastSuccessAt.getTime() > periodMs) {
      due.push({ job, periodMs, lastSuccessAt });
    }
  }
  return due;
}
