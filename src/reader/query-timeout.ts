import type { DuckDBConnection } from '@duckdb/node-api';
import { SyncError } from '../util/errors.js';

/**
 * Runs one warehouse call (a query, or the fetch of one result chunk) with a time limit: past `timeoutMs`
 * the connection's running query is interrupted (`DuckDBConnection.interrupt`) and the call fails with
 * `READER_QUERY_TIMEOUT`, which the reader answers with 503 (REPORTS_READER_QUERY_TIMEOUT_MS). The caller
 * must then discard the connection ({@link ConnectionPool.discard}): its state is unknown.
 *
 * @param what names the call in the error message, e.g. `the list query of GET /api/v1/public/reports`
 * @throws SyncError `READER_QUERY_TIMEOUT` (retryable) when the limit passed; otherwise what `run` throws
 */
export async function withQueryTimeout<T>(
  connection: DuckDBConnection,
  timeoutMs: number,
  what: string,
  run: () => Promise<T>,
): Promise<T> {
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    connection.interrupt();
  }, timeoutMs);
  try {
    return await run();
  } catch (err) {
    if (!fired) throw err;
    throw new SyncError(
      'READER_QUERY_TIMEOUT',
      `${what} took longer than ${timeoutMs} ms and was stopped (REPORTS_READER_QUERY_TIMEOUT_MS); try again later.`,
      { retryable: true, cause: err, context: { timeoutMs } },
    );
  } finally {
    clearTimeout(timer);
  }
}
