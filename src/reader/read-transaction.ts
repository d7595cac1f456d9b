import type { DuckDBConnection } from '@duckdb/node-api';
import type { ConnectionPool } from './connection-pool.js';
import { withQueryTimeout } from './query-timeout.js';

/**
 * One read transaction on a pooled connection: every query of a response sees the same committed data
 * state (DuckDB MVCC snapshot), so an export's validators, row count, columns and body agree even when a
 * sync run commits meanwhile (docs/how-a-sync-works.md: readers never see half a run). Nothing is ever written.
 *
 * @example
 * const tx = await ReadTransaction.begin(pool, 10_000);
 * try { ...queries on tx.connection... } finally { await tx.finish(true); }
 */
export class ReadTransaction {
  readonly connection: DuckDBConnection;
  readonly #pool: ConnectionPool;
  #finished = false;

  private constructor(pool: ConnectionPool, connection: DuckDBConnection) {
    this.#pool = pool;
    this.connection = connection;
  }

  /**
   * Takes a connection from the pool and opens a transaction on it.
   * @throws SyncError `READER_CLOSED` when the pool is closed, `READER_QUERY_TIMEOUT` past `timeoutMs`
   */
  static async begin(pool: ConnectionPool, timeoutMs: number): Promise<ReadTransaction> {
    const connection = await pool.acquire();
    try {
      await withQueryTimeout(connection, timeoutMs, 'Opening a read transaction', () =>
        connection.run('BEGIN TRANSACTION'),
      );
    } catch (err) {
      pool.discard(connection);
      throw err;
    }
    return new ReadTransaction(pool, connection);
  }

  /**
   * Ends the transaction and gives the connection back. `ok = false` (a failed or abandoned response: the
   * client went away, a query timed out) closes the connection instead, which also ends its transaction,
   * so a connection in an unknown state never serves another request. Idempotent.
   */
  async finish(ok: boolean): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    if (!ok) {
      this.#pool.discard(this.connection);
      return;
    }
    try {
      await this.connection.run('COMMIT');
      this.#pool.release(this.connection);
    } catch {
      this.#pool.discard(this.connection);
    }
  }
}
