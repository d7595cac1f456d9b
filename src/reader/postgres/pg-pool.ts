import pg from 'pg';
import { SyncError, errorMessage } from '../../util/errors.js';
import { postgresClientConfig, registerPostgresSecret } from '../../warehouse/postgres/pg-client.js';

/** Connection settings of the reader's PostgreSQL pools (docs/deployment.md, "Serving from PostgreSQL"). */
export interface PgPoolOptions {
  /** A `postgres://` URL; libpq parameters (`sslmode`, `application_name`, `?host=/socket`) work. */
  url: string;
  /** Connections at most (REPORTS_READER_CONNECTIONS or REPORTS_READER_EXPORT_CONNECTIONS). */
  size: number;
  /** Longest wait for a connection, ms (REPORTS_READER_ACQUIRE_TIMEOUT_MS): then `READER_BUSY`. */
  acquireTimeoutMs: number;
  /** `statement_timeout` of every statement, ms (REPORTS_READER_QUERY_TIMEOUT_MS). */
  queryTimeoutMs: number;
}

/**
 * Session settings of every reader connection, in one statement (a client runs its queries in order; a
 * second one queued at connect is deprecated in pg 8). First what answers depend on, as every connection
 * of this tool pins it (`SESSION_SETTINGS` of pg-client.ts: floats exact, dates ISO in UTC). Then speed:
 * the page statement is prepared once per connection (pg-list-pages.ts) and its rows are found by seeks on
 * the filter's index whatever the values, so its generic plan is as good as a custom one and saves
 * planning it again at each execution (~0.3 ms of a ~0.5 ms page). JIT compilation is off: a generic
 * plan's row estimates pass `jit_above_cost` and compiling took ~170 ms for a query that runs in under
 * 1 ms (PostgreSQL docs, "JIT Accelerated Operations"). Measured at 4M reports, random deep pages, no page
 * cache: 1,650 req/s with custom plans, 2,680 with these (docs/performance.md). A setting the server does
 * not have (`jit` before PostgreSQL 11, `plan_cache_mode` before 12) is skipped: only speed depends on it.
 */
export const READER_SESSION_SETTINGS = `SELECT set_config(s.name, v.value, false)
  FROM (VALUES ('extra_float_digits', '3'), ('datestyle', 'ISO, MDY'), ('timezone', 'UTC'),
               ('jit', 'off'), ('plan_cache_mode', 'force_generic_plan')) AS v(name, value)
  JOIN pg_settings s ON lower(s.name) = v.name`;

/** Connection errors of the server or the network: the server is down or going away. */
const UNREACHABLE = /^(08|57P0[1-3]|53300)/;
/** The schema or one of its tables is missing: nothing was published there yet. */
const NOT_PUBLISHED = new Set(['3F000', '42P01']);

/**
 * A pool of read-only PostgreSQL connections for the reader (pg.Pool). Stateless between requests, so
 * any number of reader replicas can share one server (or its streaming replicas). Errors come out as
 * the reader's error codes, which the HTTP shell answers 503 with `Retry-After`:
 * - no connection free within the acquire timeout → `READER_BUSY`;
 * - a statement past `statement_timeout` → `READER_QUERY_TIMEOUT`;
 * - the server unreachable, shutting down, or the schema not published yet → `READER_POSTGRES_UNAVAILABLE`;
 * any other server error is thrown as it is (a 500 whose details go to the log only).
 */
export class PgReaderPool {
  readonly #pool: pg.Pool;
  readonly #size: number;
  #waiting = 0;
  #inUse = 0;

  constructor(options: PgPoolOptions) {
    registerPostgresSecret(options.url);
    this.#size = options.size;
    this.#pool = new pg.Pool({
      application_name: 'reports-sync reader',
      ...postgresClientConfig(options.url),
      max: options.size,
      connectionTimeoutMillis: options.acquireTimeoutMs,
      statement_timeout: options.queryTimeoutMs,
      idleTimeoutMillis: 30_000,
    });
    // An idle connection whose server went away: the next checkout gets a fresh one.
    this.#pool.on('error', () => undefined);
    // Queued before any query of the connection's first checkout (a client runs its queries in order).
    this.#pool.on('connect', (client) => {
      // Refused, the connection is closed (its first query fails) rather than used to serve answers in the
      // server's own formats.
      client.query(READER_SESSION_SETTINGS).catch(() => void client.end().catch(() => undefined));
    });
  }

  /** Occupancy, as `/healthz` reports it: `saturated` while every connection is in use and requests wait. */
  get state(): { size: number; inUse: number; waiting: number; saturated: boolean } {
    return {
      size: this.#size,
      inUse: this.#inUse,
      waiting: this.#waiting,
      saturated: this.#inUse >= this.#size && this.#waiting > 0,
    };
  }

  /**
   * Runs `fn` on a pooled connection and gives it back (a connection that failed is discarded).
   * @throws SyncError as the class says
   */
  async use<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const lease = await this.lease();
    try {
      const result = await fn(lease.client);
      lease.release();
      return result;
    } catch (err) {
      lease.release(err);
      throw readerError(err);
    }
  }

  /**
   * A connection held until `release` (an export holds one while its body is spooled); `release(err)`
   * discards a connection that a network error broke.
   * @throws SyncError as the class says
   */
  async lease(): Promise<{ client: pg.PoolClient; release(err?: unknown): void }> {
    let client: pg.PoolClient;
    this.#waiting++;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw readerError(err);
    } finally {
      this.#waiting--;
    }
    this.#inUse++;
    let released = false;
    return {
      client,
      release: (err?: unknown) => {
        if (released) return;
        released = true;
        this.#inUse--;
        client.release(err instanceof Error && !isServerStatementError(err) ? err : undefined);
      },
    };
  }

  /** Ends every connection. Idempotent. */
  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }
}

/** A statement the server refused (the connection is still good), as opposed to a broken connection. */
function isServerStatementError(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !UNREACHABLE.test(code);
}

/** Maps a pg error to the reader's codes (see {@link PgReaderPool}); others pass through. */
export function readerError(err: unknown): unknown {
  if (err instanceof SyncError) return err;
  const code = (err as { code?: unknown }).code;
  const message = errorMessage(err);
  if (/timeout exceeded when trying to connect/i.test(message)) {
    return new SyncError(
      'READER_BUSY',
      'Every PostgreSQL connection of the reader stayed busy; retry shortly.',
      {
        retryable: true,
        cause: err,
      },
    );
  }
  if (code === '57014') {
    return new SyncError(
      'READER_QUERY_TIMEOUT',
      'A PostgreSQL query of the reader took too long; retry shortly.',
      {
        cause: err,
      },
    );
  }
  if (typeof code === 'string' && NOT_PUBLISHED.has(code)) {
    return new SyncError(
      'READER_POSTGRES_UNAVAILABLE',
      'Nothing is published to this PostgreSQL schema yet: run `reports-sync publish-postgres`.',
      { retryable: true, cause: err },
    );
  }
  const network = typeof code === 'string' && (UNREACHABLE.test(code) || /^E[A-Z]+$/.test(code));
  if (network || /Connection terminated|connect ECONNREFUSED/i.test(message)) {
    return new SyncError(
      'READER_POSTGRES_UNAVAILABLE',
      'The reader cannot reach PostgreSQL; retry shortly.',
      {
        retryable: true,
        cause: err,
      },
    );
  }
  return err;
}
