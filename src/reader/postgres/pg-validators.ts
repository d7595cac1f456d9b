import type { Validators } from '../validators.js';
import type { PgReaderPool } from './pg-pool.js';
import { pgValidators, type PgReaderQueries, type PublishedState } from './pg-queries.js';

/** The published state as the reader last saw it, kept in memory for `/healthz` and `/metrics`. */
export interface PgObserved {
  state: PublishedState | undefined;
  /** When that read succeeded (epoch ms), or 0. */
  readAtMs: number;
  /** Set while PostgreSQL cannot be reached or holds no publish (the last read failed). */
  unreachable: { code: string; message: string } | undefined;
}

/**
 * The published state (`publish_state`), re-read at most once per `ttlMs` (REPORTS_READER_VALIDATORS_TTL_MS)
 * and in the background every `max(ttlMs, 250)` ms, so a `304` and a cached list page cost no query and
 * `/healthz` answers from memory. A list page that must be read carries the state read with its rows
 * (pg-queries.ts), never this cached one.
 */
export class PgCurrentState {
  #observed: PgObserved = { state: undefined, readAtMs: 0, unreachable: undefined };
  #readAt = 0;
  #pending: Promise<PublishedState> | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: PgReaderPool,
    private readonly queries: PgReaderQueries,
    private readonly ttlMs: number,
  ) {}

  /** Validators of the current published state (cached up to `ttlMs`); throws as the pool does. */
  async get(): Promise<Validators> {
    return pgValidators(await this.state());
  }

  /** The current published state (cached up to `ttlMs`). */
  state(): Promise<PublishedState> {
    const cached = this.#observed.state;
    if (cached !== undefined && performance.now() - this.#readAt < this.ttlMs) return Promise.resolve(cached);
    this.#pending ??= this.#read().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  get observed(): PgObserved {
    return this.#observed;
  }

  /** Notes a failed query (a 500), so `/healthz` reports it until a read succeeds. */
  noteFailure(code: string, message: string): void {
    this.#observed = { ...this.#observed, unreachable: { code, message } };
  }

  /** Reads once now, then keeps the state fresh in the background until {@link stop}. Never throws. */
  async start(): Promise<void> {
    await this.state().catch(() => undefined);
    this.#timer = setInterval(() => void this.state().catch(() => undefined), Math.max(this.ttlMs, 250));
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  async #read(): Promise<PublishedState> {
    const started = performance.now();
    try {
      const state = await this.pool.use((c) => this.queries.state(c));
      this.#observed = { state, readAtMs: Date.now(), unreachable: undefined };
      this.#readAt = started;
      return state;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code !== 'READER_BUSY' && code !== 'READER_QUERY_TIMEOUT') {
        this.noteFailure(
          code === 'READER_POSTGRES_UNAVAILABLE' ? code : 'WAREHOUSE_UNREACHABLE',
          (err as Error).message,
        );
      }
      throw err;
    }
  }
}
