import cron from 'node-cron';

/**
 * The next `count` times a cron expression fires after now, in `timezone` (node-cron's own matcher, so the
 * answer is what the daemon will do). The expression must be valid (see `loadJobs`).
 */
export function nextRuns(schedule: string, timezone: string, count: number): Date[] {
  const task = cron.createTask(schedule, () => undefined, { timezone });
  try {
    return task.getNextRuns(count);
  } finally {
    void task.destroy();
  }
}

/**
 * A schedule's period in ms: the gap between its next two firings (a day for `0 2 * * *`, an hour for
 * `15 * * * *`). Used by the catch-up rule at start (a job whose last successful run is older
 * than its period runs once). For irregular expressions (weekdays only) it is the next gap, not the
 * longest one.
 */
export function schedulePeriodMs(schedule: string, timezone: string): number {
  const [first, second] = nextRuns(schedule, timezone, 2);
  if (!first || !second) throw new Error(`cron expression ${schedule} has no two next runs`);
  return second.getTime() - first.getTime();
}

/**
 * A job's freshness objective (ms): its own (`freshnessMs`, from its declaration or
 * `REPORTS_FRESHNESS_<NAME>`), else twice its schedule's period (docs/deployment.md, "Alerts"); `null` when
 * it has none (turned `off`, or the job is disabled).
 */
export function freshnessObjectiveMs(
  job: { schedule: string; enabled: boolean; freshnessMs?: number | null | undefined },
  timezone: string,
): number | null {
  if (!job.enabled || job.freshnessMs === null) return null;
  return job.freshnessMs ?? 2 * schedulePeriodMs(job.schedule, timezone);
}
