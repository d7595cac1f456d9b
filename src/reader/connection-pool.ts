import type { DuckDBConnection } from '@duckdb/node-api';
import { SyncError } from '../util/errors.js';
import type { Warehouse } from '../warehouse/database.js';

/**
 * A bounded set of DuckDB connections on the process's one warehouse instance (docs/how-a-sync-works.md: one
 * `DuckDBInstance` per process; each connection runs one query at a time and has its own transaction).
 * The reader takes a connection per request and gives it back when the response is done, so at most
 * `size` warehouse queries run at once; further requests wait in arrival order, each at most the acquire
 * timeout (then `READER_BUSY`, answered 503 with `Retry-After`: a saturated reader sheds load instead of
 * queueing without bound).
 *
 * @example
 * const pool = new ConnectionPool(warehouse, 4);
 * const rows = await pool.use((c) => c.runAndReadAll('SELECT 1'));
 * pool.close();
 */
export class ConnectionPool {
  readonly #warehouse: Warehouse;
  readonly #size: number;
  readonly #idle: DuckDBConnection[] = [];
  readonly #acquireTimeoutMs: number;
  readonly #waiters: Waiter[] = [];
  #open = 0;
  #closed = false;

  /**
   * @param size connections at most (REPORTS_READER_CONNECTIONS)
   * @param acquireTimeoutMs longest wait for a free connection (REPORTS_READER_ACQUIRE_TIMEOUT_MS)
   */
  constructor(warehouse: Warehouse, size: number, acquireTimeoutMs = 2000) {
    this.#warehouse = warehouse;
    this.#size = size;
    this.#acquireTimeoutMs = acquireTimeoutMs;
  }

  /**
   * A connection for the caller alone until {@link release} or {@link discard}.
   * @throws SyncError `READER_CLOSED` once the pool is closed (the reader is shutting down); `READER_BUSY`
   *   (retryable) when no connection was free within the acquire timeout
   */
  async acquire(): Promise<DuckDBConnection> {
    if (this.#closed) throw closedError();
    const idle = this.#idle.pop();
    if (idle) return idle;
    if (this.#open < this.#size) {
      this.#open++;
      try {
        return await this.#warehouse.connect();
      } catch (err) {
        this.#open--;
        throw err;
      }
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve: (c) => {
          clearTimeout(waiter.timer);
          resolve(c);
        },
        reject: (e) => {
          clearTimeout(waiter.timer);
          reject(e);
        },
        timer: setTimeout(() => {
          const at = this.#waiters.indexOf(waiter);
          if (at >= 0) this.#waiters.splice(at, 1);
          reject(busyError(this.#acquireTimeoutMs));
        }, this.#acquireTimeoutMs),
      };
      this.#waiters.push(waiter);
    });
  }

  /** Gives a healthy connection back (no open transaction, no query running). */
  release(connection: DuckDBConnection): void {
    if (this.#closed) {
      this.#drop(connection);
      return;
    }
    const waiter = this.#waiters.shift();
    if (waiter) waiter.resolve(connection);
    else this.#idle.push(connection);
  }

  /** Closes a connection whose state is unknown (interrupted query, failed rollback) and frees its place. */
  discard(connection: DuckDBConnection): void {
    this.#drop(connection);
    const waiter = this.#waiters.shift();
    if (!waiter) return;
    this.#open++;
    this.#warehouse.connect().then(waiter.resolve, (err: unknown) => {
      this.#open--;
      waiter.reject(err);
    });
  }

  /** Runs `fn` on a connection and gives it back; a query timeout discards the connection instead. */
  async use<T>(fn: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    const connection = await this.acquire();
    try {
      const value = await fn(connection);
      this.release(connection);
      return value;
    } catch (err) {
      this.discard(connection);
      throw err;
    }
  }

  /** Connections open now (idle or in use). */
  get open(): number {
    return this.#open;
  }

  /** What `/healthz` reports, read from memory: no connection is taken to answer it. */
  get state(): PoolState {
    const inUse = this.#open - this.#idle.length;
    const waiting = this.#waiters.length;
    return { size: this.#size, inUse, waiting, saturated: inUse >= this.#size && waiting > 0 };
  }

  /** Closes the idle connections; connections in use are closed when released. Waiting requests fail. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(closedError());
    for (const connection of this.#idle.splice(0)) this.#drop(connection);
  }

  #drop(connection: DuckDBConnection): void {
    this.#open--;
    try {
      connection.closeSync();
    } catch {
      // Already closed with the instance: nothing left to free.
    }
  }
}

interface Waiter {
  resolve: (c: DuckDBConnection) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout;
}

/** The pool's occupancy. `saturated`: every connection is in use and requests are waiting for one. */
export interface PoolState {
  size: number;
  inUse: number;
  waiting: number;
  saturated: boolean;
}

function busyError(timeoutMs: number): SyncError {
  return new SyncError(
    'READER_BUSY',
    `Every warehouse connection stayed busy for ${timeoutMs} ms (REPORTS_READER_ACQUIRE_TIMEOUT_MS); try again shortly.`,
    { retryable: true, context: { timeoutMs } },
  );
}

function closedError(): SyncError {
  return new SyncError('READER_CLOSED', 'The reader is shutting down and takes no more warehouse queries.', {
    retryable: true,
  });
}
