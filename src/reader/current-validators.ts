import type { ConnectionPool } from './connection-pool.js';
import { lastSuccess } from './last-success.js';
import { withQueryTimeout } from './query-timeout.js';
import { validatorsOf, type Validators } from './validators.js';

/**
 * The validators of the current data state for the JSON list, re-read from `sync_runs` at most once per
 * `ttlMs` (REPORTS_READER_VALIDATORS_TTL_MS; 0 = on every request). Reading them is a DuckDB query, the
 * whole cost of a cached list page; with the TTL a busy list answers from memory. The price is bounded
 * staleness: for up to `ttlMs` after a run commits, list answers keep the previous state's tag and (cached)
 * pages. A page computed in that window from the new data under the old tag only costs a client one more
 * full answer later (see routes/list.ts). Exports and stats always read fresh validators in their
 * transaction. Concurrent refreshes share one query.
 */
export class CurrentValidators {
  readonly #pool: ConnectionPool;
  readonly #ttlMs: number;
  readonly #timeoutMs: number;
  #value: Validators | undefined;
  #readAt = 0;
  #pending: Promise<Validators> | undefined;

  constructor(pool: ConnectionPool, ttlMs: number, timeoutMs: number) {
    this.#pool = pool;
    this.#ttlMs = ttlMs;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * The current validators (cached up to `ttlMs`).
   * @throws SyncError `READER_QUERY_TIMEOUT` / `READER_CLOSED` when they must be read and cannot be
   */
  get(): Promise<Validators> {
    if (this.#value !== undefined && performance.now() - this.#readAt < this.#ttlMs) {
      return Promise.resolve(this.#value);
    }
    this.#pending ??= this.#read().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #read(): Promise<Validators> {
    const started = performance.now();
    const last = await this.#pool.use((c) =>
      withQueryTimeout(c, this.#timeoutMs, 'Reading the last successful run', () => lastSuccess(c)),
    );
    this.#value = validatorsOf(last);
    this.#readAt = started;
    return this.#value;
  }
}
