import type { ConnectionPool } from './connection-pool.js';
import { readRunState, type RunState } from './last-success.js';
import { withQueryTimeout } from './query-timeout.js';
import { validatorsOf, type Validators } from './validators.js';

/** The warehouse as the reader last saw it, kept in memory for `/healthz` and the status page. */
export interface ObservedState {
  /** The last run state read, `undefined` until the first read succeeded. */
  runs: RunState | undefined;
  /** When that read succeeded (epoch ms), or 0. */
  readAtMs: number;
  /** The last read failed for another reason than a busy pool (the warehouse is closed or broken). */
  unreachable: { code: string; message: string } | undefined;
}

/**
 * The run state of the warehouse (see last-success.ts), re-read from `sync_runs` at most once per `ttlMs`
 * (REPORTS_READER_VALIDATORS_TTL_MS; 0 = on every request) and in the background every
 * `max(ttlMs, 250)` ms, so `/healthz` answers from memory without a pool connection. With the TTL a busy
 * list answers from memory too; the price is bounded staleness: for up to `ttlMs` after a run commits, list
 * answers keep the previous state's tag and (cached) pages. A page computed in that window from the new data
 * is labelled by validators read again ({@link fresh}; routes/list.ts), never by the old tag. Exports and
 * stats read fresh validators in their transaction. Concurrent refreshes share one query.
 */
export class CurrentValidators {
  readonly #pool: ConnectionPool;
  readonly #ttlMs: number;
  readonly #timeoutMs: number;
  #observed: ObservedState = { runs: undefined, readAtMs: 0, unreachable: undefined };
  #readAt = 0;
  #pending: Promise<RunState> | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(pool: ConnectionPool, ttlMs: number, timeoutMs: number) {
    this.#pool = pool;
    this.#ttlMs = ttlMs;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * The validators of the current data state (cached up to `ttlMs`).
   * @throws SyncError `READER_QUERY_TIMEOUT` / `READER_BUSY` / `READER_CLOSED` when they must be read and cannot be
   */
  async get(): Promise<Validators> {
    return validatorsOf((await this.runs()).changed);
  }

  /** The run state (cached up to `ttlMs`); throws as {@link get}. */
  runs(): Promise<RunState> {
    const cached = this.#observed.runs;
    if (cached !== undefined && performance.now() - this.#readAt < this.#ttlMs)
      return Promise.resolve(cached);
    this.#pending ??= this.#read().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  /** The run state read now, past the TTL (shared with a read under way). Throws as {@link get}. */
  fresh(): Promise<RunState> {
    this.#readAt = Number.NEGATIVE_INFINITY;
    return this.runs();
  }

  /** What the last reads saw; never touches the warehouse. */
  get observed(): ObservedState {
    return this.#observed;
  }

  /** Notes a failure of the warehouse seen by a request (a 500), so `/healthz` reports it until a read succeeds. */
  noteFailure(code: string, message: string): void {
    this.#observed = { ...this.#observed, unreachable: { code, message } };
  }

  /** Reads once now, then keeps the state fresh in the background until {@link stop}. Never throws. */
  async start(): Promise<void> {
    await this.runs().catch(() => undefined);
    this.#timer = setInterval(() => void this.runs().catch(() => undefined), Math.max(this.#ttlMs, 250));
    this.#timer.unref();
  }

  /** Ends the background refresh. Idempotent. */
  stop(): void {
    clearInterval(this.#timer);
  }

  async #read(): Promise<RunState> {
    const started = performance.now();
    try {
      const runs = await this.#pool.use((c) =>
        withQueryTimeout(c, this.#timeoutMs, 'Reading the last successful run', () => readRunState(c)),
      );
      this.#observed = { runs, readAtMs: Date.now(), unreachable: undefined };
      this.#readAt = started;
      return runs;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      // A busy pool says nothing about the warehouse; anything else (closed, invalidated) does.
      if (code !== 'READER_BUSY' && code !== 'READER_QUERY_TIMEOUT' && code !== 'READER_CLOSED') {
        this.noteFailure(
          'WAREHOUSE_UNREACHABLE',
          'The warehouse did not answer a query; see the reader log.',
        );
      }
      throw err;
    }
  }
}
