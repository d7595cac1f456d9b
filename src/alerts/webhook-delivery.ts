import { setTimeout as sleep } from 'node:timers/promises';
import PQueue from 'p-queue';
import pRetry, { AbortError } from 'p-retry';
import { Agent, request, type Dispatcher } from 'undici';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { redactSecrets } from '../util/redact.js';
import type { AlertEvent } from './alert-event.js';
import type { AttemptRecord, DeliveryLog } from './delivery-log.js';
import { deliveryRequest, type Endpoint } from './webhook-payload.js';

/** Settings of {@link WebhookDelivery} (from the config: `REPORTS_ALERT_WEBHOOK_*`). */
export interface WebhookSettings {
  endpoints: readonly Endpoint[];
  secret: string | undefined;
  /** Longest time of one attempt (ms). */
  timeoutMs: number;
  /** Retries after a failed attempt that may succeed later. */
  retries: number;
  /** First backoff delay (ms), doubled per retry (default 1000). */
  retryBaseMs?: number;
}

/** An HTTP answer that a later attempt may change: 408, 429, 5xx. */
const retryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;

/**
 * Delivers alert events to webhooks in the background: {@link enqueue} records each (event, endpoint) as
 * `pending` in `alert_deliveries` and returns; a queue (p-queue, two at a time) posts them, retrying a
 * network error, a timeout, 408, 429 or 5xx with backoff doubling from 1 s (p-retry), and records every
 * attempt (status code, attempts, last error). Another 4xx, or the last retry, marks it `failed`; a 2xx
 * `delivered`. A sync never waits for it and never fails because of it.
 */
export class WebhookDelivery {
  readonly #settings: WebhookSettings;
  readonly #log: DeliveryLog;
  readonly #logger: Logger;
  readonly #queue = new PQueue({ concurrency: 2 });
  readonly #stop = new AbortController();
  readonly #agent: Dispatcher;

  constructor(settings: WebhookSettings, log: DeliveryLog, logger: Logger) {
    this.#settings = settings;
    this.#log = log;
    this.#logger = logger.child({ component: 'alerts' });
    this.#agent = new Agent({ connect: { timeout: settings.timeoutMs }, keepAliveTimeout: 4_000 });
  }

  /** Whether any webhook is configured. */
  get enabled(): boolean {
    return this.#settings.endpoints.length > 0;
  }

  /**
   * Records a `pending` delivery per endpoint and queues it. `resumed`: deliveries already recorded (left
   * pending by an earlier process), keyed `<event id>\u0000<endpoint key>`, with the attempts they had:
   * queued again without a new row, their count of attempts going on from there (a restart gives them
   * their retries again).
   */
  async enqueue(
    events: readonly AlertEvent[],
    resumed: ReadonlyMap<string, number> = new Map(),
  ): Promise<void> {
    for (const event of events) {
      for (const endpoint of this.#settings.endpoints) {
        const prior = resumed.get(`${event.eventId}\u0000${endpoint.key}`);
        if (prior === undefined) {
          // Sent all the same when the warehouse cannot record it (a full disk): the news matters more.
          await this.#log.pending(event.eventId, endpoint).catch((err: unknown) => {
            this.#logger.error(
              { eventId: event.eventId, endpoint: endpoint.label, err: errorMessage(err) },
              'alert delivery could not be recorded in the warehouse; sending it all the same',
            );
          });
        }
        void this.#queue.add(() => this.#deliver(event, endpoint, prior ?? 0));
      }
    }
  }

  /**
   * Waits up to `ms` for the queue to empty, then cuts attempts still under way (their rows stay
   * `pending`: the daemon's next start sends them) and closes the HTTP agent.
   */
  async close(ms: number): Promise<void> {
    const idle = this.#queue.onIdle();
    const timer = new AbortController();
    await Promise.race([idle, sleep(ms, undefined, { signal: timer.signal }).catch(() => undefined)]);
    timer.abort();
    this.#queue.clear();
    this.#stop.abort();
    await this.#queue.onIdle();
    await this.#agent.close().catch(() => undefined);
  }

  /**
   * Sends one event to one endpoint with its retries, then records the outcome. Never rejects (it runs
   * detached in the queue): a record the warehouse cannot write (a full disk) is logged, and the delivery
   * is told as it went, not as the record's failure.
   */
  async #deliver(event: AlertEvent, endpoint: Endpoint, priorAttempts: number): Promise<void> {
    if (this.#stop.signal.aborted) return;
    let attempts = priorAttempts;
    let statusCode: number | null = null;
    let outcome: AttemptRecord;
    try {
      await pRetry(
        async () => {
          attempts += 1;
          statusCode = await this.#post(event, endpoint);
          if (statusCode >= 200 && statusCode < 300) return;
          const failure = new Error(`the receiver answered ${statusCode}`);
          throw retryableStatus(statusCode) ? failure : new AbortError(failure);
        },
        {
          retries: this.#settings.retries,
          minTimeout: this.#settings.retryBaseMs ?? 1_000,
          factor: 2,
          signal: this.#stop.signal,
          onFailedAttempt: async ({ error }) => {
            await this.#record(event, endpoint, {
              status: 'pending',
              attempts,
              statusCode,
              error: errorMessage(error),
            });
          },
        },
      );
      outcome = { status: 'delivered', attempts, statusCode, error: null };
    } catch (err) {
      if (this.#stop.signal.aborted) return; // left pending for the next start
      const error = redactSecrets(errorMessage(err));
      outcome = { status: 'failed', attempts, statusCode, error };
      this.#logger.warn(
        { eventId: event.eventId, type: event.type, endpoint: endpoint.label, attempts, error },
        'alert webhook delivery failed',
      );
    }
    await this.#record(event, endpoint, outcome);
  }

  /** Records an attempt in `alert_deliveries`; a failure to write it is logged, never thrown. */
  async #record(event: AlertEvent, endpoint: Endpoint, r: AttemptRecord): Promise<void> {
    try {
      await this.#log.attempt(event.eventId, endpoint, r);
    } catch (err) {
      this.#logger.error(
        { eventId: event.eventId, endpoint: endpoint.label, status: r.status, err: errorMessage(err) },
        'alert delivery could not be recorded in the warehouse',
      );
    }
  }

  /** One attempt: the status code of the answer (its body is read and dropped). */
  async #post(event: AlertEvent, endpoint: Endpoint): Promise<number> {
    const { body, headers } = deliveryRequest(endpoint, event, this.#settings.secret, new Date());
    const signal = AbortSignal.any([this.#stop.signal, AbortSignal.timeout(this.#settings.timeoutMs)]);
    try {
      const res = await request(endpoint.url, {
        method: 'POST',
        body,
        headers,
        signal,
        dispatcher: this.#agent,
        headersTimeout: this.#settings.timeoutMs,
        bodyTimeout: this.#settings.timeoutMs,
      });
      await res.body.dump().catch(() => undefined);
      return res.statusCode;
    } catch (err) {
      // The URL may carry a token (a Slack path): errors name the endpoint by its label.
      throw new Error(`${endpoint.label}: ${redactSecrets(errorMessage(err))}`);
    }
  }
}
