import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { Report } from '../schema/report.js';
import { withQueryTimeout } from './query-timeout.js';
import { rowToReport } from './report-rows.js';

/**
 * Streams the result of a report query chunk by chunk (DuckDB data chunks, 2,048 rows each): memory stays
 * at one chunk whatever the table size, and the next chunk is only fetched when the consumer asks for it
 * (so a slow HTTP client slows the query down instead of filling memory). Each fetch runs under the
 * reader's query timeout.
 *
 * @param sql a SELECT whose columns are `REPORT_COLUMNS_SQL`
 * @throws SyncError `READER_QUERY_TIMEOUT` when one fetch takes longer than `timeoutMs`; DuckDB errors as they are
 */
export async function* streamReports(
  connection: DuckDBConnection,
  sql: string,
  params: Record<string, DuckDBValue>,
  timeoutMs: number,
  what: string,
): AsyncGenerator<Report[]> {
  const result = await withQueryTimeout(connection, timeoutMs, what, () => connection.stream(sql, params));
  for (;;) {
    const chunk = await withQueryTimeout(connection, timeoutMs, what, () => result.fetchChunk());
    if (chunk === null || chunk.rowCount === 0) return;
    yield chunk.getRows().map(rowToReport);
  }
}
