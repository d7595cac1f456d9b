import { formatAge } from '../util/format-age.js';
import type { Condition } from './alert-event.js';

/** What the freshness rule knows of one job. Times are epoch ms. */
export interface FreshnessInput {
  job: string;
  /** Its cron expression, for the sentence. */
  schedule: string;
  /** Its freshness objective (ms), see `freshnessObjectiveMs`. */
  objectiveMs: number;
  /** When its last successful run finished; undefined when it never succeeded. */
  lastSuccessMs: number | undefined;
  /** Since when it is watched (the daemon's start): the age of a job that never succeeded counts from it. */
  watchedSinceMs: number;
  nowMs: number;
}

/**
 * The freshness incident of a job (`freshness:<job>`): active when its last success (or, when it never
 * succeeded, the start of the watch) is older than its objective. Opens with `freshness.breached`,
 * resolves with `freshness.restored`. Pure: the watchdog feeds it the clock.
 */
export function freshnessCondition(f: FreshnessInput): Condition {
  const since = f.lastSuccessMs ?? f.watchedSinceMs;
  const ageMs = Math.max(0, f.nowMs - since);
  const figures = {
    objectiveMs: f.objectiveMs,
    ageMs,
    lastSuccessAt: f.lastSuccessMs === undefined ? null : new Date(f.lastSuccessMs).toISOString(),
    schedule: f.schedule,
  };
  const objective = `objective ${formatAge(f.objectiveMs)}, schedule "${f.schedule}"`;
  return {
    incident: `freshness:${f.job}`,
    active: ageMs > f.objectiveMs,
    open: {
      type: 'freshness.breached',
      job: f.job,
      runId: null,
      summary:
        f.lastSuccessMs === undefined
          ? `${f.job} has not succeeded once in the ${formatAge(ageMs)} it has been watched (${objective})`
          : `${f.job} has had no successful run for ${formatAge(ageMs)} (${objective})`,
      figures,
    },
    resolve: {
      type: 'freshness.restored',
      job: f.job,
      runId: null,
      summary: `${f.job} is fresh again: its last success finished ${formatAge(ageMs)} ago (${objective})`,
      figures,
    },
  };
}

/** How far one publish target is behind the warehouse (see {@link PublishTargetLag}). */
export interface PublishLag {
  /** Time since the first committed change the target does not hold yet (ms); 0 when it holds them all. */
  lagMs: number;
  /** When the target was last written; null when it never was. */
  publishedAt: Date | null;
  /** When the first change it misses was committed; null when it misses none. */
  pendingSince: Date | null;
  /** Finished runs it does not hold yet, for targets that count them (PostgreSQL). */
  runsBehind?: number;
  /** The error of its last publish attempt, null when that succeeded (targets that record it). */
  lastError?: string | null;
}

/**
 * A place the warehouse is published to (the DuckDB/Parquet snapshot; more targets plug in here): how far
 * it lags behind the committed run log. The daemon's watchdog asks each target at every check, raises
 * `publish.lagging` past `REPORTS_ALERT_PUBLISH_LAG_MS`, and exports the lag as a gauge.
 */
export interface PublishTargetLag {
  /** Stable name (`snapshot`): the incident `publish:<target>` and the gauge's label. */
  readonly target: string;
  /** Its lag at `nowMs`, or undefined when it cannot tell (nothing to publish yet). */
  lag(nowMs: number): Promise<PublishLag | undefined>;
}

/**
 * The publish incident of a target (`publish:<target>`): active while the first change it misses was
 * committed more than `thresholdMs` ago.
 */
export function publishCondition(target: string, lag: PublishLag, thresholdMs: number): Condition {
  const figures = {
    lagMs: lag.lagMs,
    thresholdMs,
    publishedAt: lag.publishedAt?.toISOString() ?? null,
    pendingSince: lag.pendingSince?.toISOString() ?? null,
  };
  const written = lag.publishedAt === null ? 'never written' : 'written before them';
  return {
    incident: `publish:${target}`,
    active: lag.lagMs > thresholdMs,
    open: {
      type: 'publish.lagging',
      job: null,
      runId: null,
      summary: `the published ${target} misses changes committed ${formatAge(lag.lagMs)} ago (${written}; threshold ${formatAge(thresholdMs)})`,
      figures,
    },
    resolve: {
      type: 'publish.caught_up',
      job: null,
      runId: null,
      summary: `the published ${target} holds every committed change again`,
      figures,
    },
  };
}
