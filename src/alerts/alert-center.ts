import type { DuckDBConnection } from '@duckdb/node-api';
import type { Config } from '../config/config.js';
import { webhookUrlList } from '../config/settings.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import { withTransaction } from '../warehouse/transaction.js';
import { transitions, type AlertDraft, type AlertEvent, type Condition } from './alert-event.js';
import { eventsById, noticesTold, openIncidents, recordEvents } from './alert-store.js';
import { DeliveryLog } from './delivery-log.js';
import { driftNotice, qualityNotice, reconciliationCondition, runCondition } from './run-rules.js';
import { UnrecordedRuns } from './unrecorded-runs.js';
import { WebhookDelivery } from './webhook-delivery.js';
import { endpointsOf } from './webhook-payload.js';

/** Pending deliveries older than this are not sent again at start: news of yesterday is no news. */
const RESUME_MAX_AGE_MS = 24 * 3_600_000;

/** Options of {@link AlertCenter}. */
export interface AlertCenterOptions {
  warehouse: Warehouse;
  config: Config;
  logger: Logger;
  /** The clock of the events' times (epoch ms; tests inject one). */
  clock?: () => number;
  /** First backoff delay of webhook retries (ms; tests shorten it). */
  retryBaseMs?: number;
}

/**
 * The alerts of one process (docs/deployment.md, "Alerts"): evaluates the rules after runs
 * ({@link afterRuns}) and on the watchdog's checks ({@link evaluate}), records what they raise in
 * `alert_events` (one open event per incident, one resolve, a notice once) and hands each new event to the
 * webhooks, in the background. Evaluations run one at a time (read the open incidents, then append, in
 * one transaction). Never throws from an evaluation: a failure is logged, and the sync it follows stands.
 */
export class AlertCenter {
  readonly #options: AlertCenterOptions;
  readonly #logger: Logger;
  readonly #delivery: WebhookDelivery;
  readonly #log: DeliveryLog;
  readonly #unrecorded = new UnrecordedRuns();
  /** Whether the last evaluation could read and write the warehouse. */
  #evaluated = false;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(options: AlertCenterOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'alerts' });
    this.#log = new DeliveryLog(options.warehouse);
    const { config } = options;
    this.#delivery = new WebhookDelivery(
      {
        endpoints: endpointsOf(webhookUrlList(config.alertWebhookUrls)),
        secret: config.alertWebhookSecret,
        timeoutMs: config.alertWebhookTimeoutMs,
        retries: config.alertWebhookRetries,
        retryBaseMs: options.retryBaseMs,
      },
      this.#log,
      options.logger,
    );
  }

  /**
   * The one hook after runs whose outcome is committed (the daemon's job, the one-shot `sync`): the run
   * incident of each run's job (and of `jobs`: a job that ended without a run row), the drift and
   * data-quality notices of each run, and the reconciliation incident. Returns the events raised.
   */
  async afterRuns(runIds: readonly string[], jobs: readonly string[] = []): Promise<AlertEvent[]> {
    const lastRunFailed = new Map<string, boolean | undefined>();
    const events = await this.evaluate(async (c) => {
      const runs = await jobsOfRuns(c, runIds);
      const conditions: Condition[] = [];
      for (const job of new Set([...jobs, ...runs.map((r) => r.job)])) {
        const run = await runCondition(c, job);
        // Only a run the log now holds ends a failure told from memory (`jobs` may have none).
        if (runs.some((r) => r.job === job)) lastRunFailed.set(job, run?.active);
        if (run) conditions.push(run);
      }
      const { config } = this.#options;
      const gap = await reconciliationCondition(c, {
        threshold: config.statsDiffWarn,
        snapshots: config.alertGapSnapshots,
      });
      if (gap) conditions.push(gap);
      const notices: AlertDraft[] = [];
      for (const run of runs) {
        const drift = await driftNotice(c, run);
        if (drift) notices.push(drift);
        const quality = await qualityNotice(c, run, config.alertQualityFlags);
        if (quality) notices.push(quality);
      }
      return { conditions, notices };
    });
    if (!this.#evaluated) return events;
    const told: AlertEvent[] = [];
    for (const [job, failed] of lastRunFailed) {
      const ended = this.#unrecorded.settled(job, failed, this.#now());
      if (ended) told.push(ended);
    }
    await this.#tell(told);
    return [...events, ...told];
  }

  /** Jobs whose last run failed without a run log row, told from memory and not ended yet. */
  get unrecordedJobs(): ReadonlySet<string> {
    return this.#unrecorded.jobs;
  }

  /**
   * A job run that ended in `err` without a run log row (syncTarget threw: the warehouse could not take
   * even the failure, a full disk): the rules cannot see it, so `run.failed` is told from memory, logged
   * and sent without a record, once per job until its outcome can be recorded again (unrecorded-runs.ts).
   */
  async unrecordedFailure(job: string, err: unknown): Promise<void> {
    const event = this.#unrecorded.failed(job, err, this.#now());
    if (event) await this.#tell([event]);
  }

  /**
   * Evaluates the conditions and notices `rules` reads, records the events they call for and queues
   * their delivery. Returns the events raised (empty on a failure, which is logged).
   */
  evaluate(
    rules: (c: DuckDBConnection) => Promise<{ conditions: Condition[]; notices?: AlertDraft[] }>,
  ): Promise<AlertEvent[]> {
    const next = this.#chain.then(() => this.#evaluate(rules));
    this.#chain = next;
    return next;
  }

  /** Sends again the deliveries an earlier process left `pending` (within the last day). */
  async resumePending(): Promise<number> {
    if (!this.#delivery.enabled) return 0;
    try {
      const pending = await this.#log.pendingSince(RESUME_MAX_AGE_MS);
      if (pending.length === 0) return 0;
      const c = await this.#options.warehouse.connect();
      let events: AlertEvent[];
      try {
        events = await eventsById(c, [...new Set(pending.map((p) => p.eventId))]);
      } finally {
        c.closeSync();
      }
      await this.#delivery.enqueue(
        events,
        new Map(pending.map((p) => [`${p.eventId}\u0000${p.endpointKey}`, p.attempts])),
      );
      return pending.length;
    } catch (err) {
      this.#logger.error({ err: errorMessage(err) }, 'pending alert deliveries could not be read');
      return 0;
    }
  }

  /** Waits for evaluations under way, then up to `drainMs` for deliveries (see WebhookDelivery.close). */
  async close(drainMs: number): Promise<void> {
    await this.#chain.catch(() => undefined);
    await this.#delivery.close(drainMs);
    await this.#log.close();
  }

  async #evaluate(
    rules: (c: DuckDBConnection) => Promise<{ conditions: Condition[]; notices?: AlertDraft[] }>,
  ): Promise<AlertEvent[]> {
    const at = this.#now();
    let events: AlertEvent[] = [];
    try {
      const c = await this.#options.warehouse.connect();
      try {
        events = await withTransaction(c, async () => {
          const { conditions, notices = [] } = await rules(c);
          const open = new Set((await openIncidents(c)).map((e) => e.incident));
          const told = await noticesTold(
            c,
            notices.map((n) => n.incident),
          );
          return recordEvents(c, transitions(open, told, conditions, notices), at);
        });
      } finally {
        c.closeSync();
      }
    } catch (err) {
      this.#evaluated = false;
      this.#logger.error({ err: errorMessage(err) }, 'alert rules could not be evaluated');
      return [];
    }
    this.#evaluated = true;
    await this.#tell(events);
    return events;
  }

  /** Logs each event and queues its delivery (a delivery the warehouse cannot record is sent all the same). */
  async #tell(events: readonly AlertEvent[]): Promise<void> {
    for (const e of events) {
      // `outcome`: a one-shot command's summary has told the run's failure; its terminal shows it once.
      const entry = {
        alert: e.type,
        incident: e.incident,
        job: e.job,
        runId: e.runId,
        figures: e.figures,
        outcome: 'alert',
      };
      if (e.state === 'open') this.#logger.error(entry, `alert: ${e.summary}`);
      else this.#logger.warn(entry, `${e.state === 'resolved' ? 'alert resolved' : 'notice'}: ${e.summary}`);
    }
    if (events.length > 0 && this.#delivery.enabled) {
      await this.#delivery.enqueue(events).catch((err: unknown) => {
        this.#logger.error({ err: errorMessage(err) }, 'alert deliveries could not be recorded');
      });
    }
  }

  #now(): Date {
    return new Date((this.#options.clock ?? Date.now)());
  }
}

/** The job of each run id, as `sync_runs` holds it (ids it does not know are left out). */
async function jobsOfRuns(
  c: DuckDBConnection,
  runIds: readonly string[],
): Promise<{ runId: string; job: string }[]> {
  const out: { runId: string; job: string }[] = [];
  for (const runId of runIds) {
    const [row] = (
      await c.runAndReadAll(`SELECT job FROM sync_runs WHERE run_id = $run`, { run: runId })
    ).getRowObjectsJS();
    if (row) out.push({ runId, job: String(row.job) });
  }
  return out;
}
