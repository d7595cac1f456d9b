import type { AlertCenter } from '../alerts/alert-center.js';
import type { AlertEvent, Condition } from '../alerts/alert-event.js';
import {
  freshnessCondition,
  publishCondition,
  type PublishLag,
  type PublishTargetLag,
} from '../alerts/watch-rules.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { freshnessObjectiveMs } from './cron-times.js';
import { lastRunsByJob } from './last-runs.js';
import type { Job } from './load-jobs.js';

/** Options of {@link Watchdog}. */
export interface WatchdogOptions {
  alerts: AlertCenter;
  jobs: readonly Job[];
  timezone: string;
  /** Publish targets whose lag is watched (`snapshotLag`, …). */
  publishTargets: readonly PublishTargetLag[];
  /** `REPORTS_ALERT_PUBLISH_LAG_MS`. */
  publishLagMs: number;
  logger: Logger;
  /** The clock (epoch ms); tests inject one. The watch starts at its first reading. */
  clock?: () => number;
}

/**
 * The daemon's watchdog (docs/deployment.md, "Alerts"): on a timer of its own, independent of the jobs,
 * it checks every enabled job's freshness (no successful run within its objective: `freshness.breached`,
 * then `freshness.restored`) and every publish target's lag (`publish.lagging`, `publish.caught_up`). So a
 * job that never runs — its schedule never fires, the queue is stuck behind a hung run — is still noticed.
 * A job that never succeeded is measured from the start of the watch.
 */
export class Watchdog {
  readonly #options: WatchdogOptions;
  readonly #clock: () => number;
  readonly #since: number;
  readonly #objectives: Map<string, number>;
  #timer: NodeJS.Timeout | undefined;
  #lags = new Map<string, PublishLag>();

  constructor(options: WatchdogOptions) {
    this.#options = options;
    this.#clock = options.clock ?? Date.now;
    this.#since = this.#clock();
    this.#objectives = new Map();
    for (const job of options.jobs) {
      const objective = freshnessObjectiveMs(job, options.timezone);
      if (objective !== null) this.#objectives.set(job.name, objective);
    }
  }

  /** Freshness objective per watched job (ms). */
  get objectives(): ReadonlyMap<string, number> {
    return this.#objectives;
  }

  /** The lag of each publish target at the last check. */
  get lags(): ReadonlyMap<string, PublishLag> {
    return this.#lags;
  }

  /** Checks every `intervalMs` until {@link stop} (the timer does not keep the process alive). */
  start(intervalMs: number): void {
    this.stop();
    this.#timer = setInterval(() => void this.check(), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One check now: the events it raised (none when nothing changed). */
  async check(): Promise<AlertEvent[]> {
    const now = this.#clock();
    const lags = new Map<string, PublishLag>();
    for (const target of this.#options.publishTargets) {
      try {
        const lag = await target.lag(now);
        if (lag) lags.set(target.target, lag);
      } catch (err) {
        this.#options.logger.warn({ err: errorMessage(err), target: target.target }, 'publish lag unknown');
      }
    }
    this.#lags = lags;
    return this.#options.alerts.evaluate(async (c) => {
      const history = await lastRunsByJob(c);
      const conditions: Condition[] = [];
      for (const job of this.#options.jobs) {
        const objectiveMs = this.#objectives.get(job.name);
        if (objectiveMs === undefined) continue;
        const last = history.get(job.name)?.lastSuccessFinishedAt?.getTime();
        conditions.push(
          freshnessCondition({
            job: job.name,
            schedule: job.schedule,
            objectiveMs,
            lastSuccessMs: last,
            watchedSinceMs: this.#since,
            nowMs: now,
          }),
        );
      }
      for (const [target, lag] of lags) {
        conditions.push(publishCondition(target, lag, this.#options.publishLagMs));
      }
      return { conditions };
    });
  }
}
