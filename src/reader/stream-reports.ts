import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { Report } from '../schema/wire-format.js';
import { withQueryTimeout } from './query-timeout.js';
import { rowToReport } from './report-rows.js';

/** Reports per slice of a chunk (a few milliseconds of serialising). */
const SLICE_ROWS = 256;

/**
 * Streams the result of a report query chunk by chunk (DuckDB data chunks, 2,048 rows each): memory stays
 * at one chunk whatever the table size, and the next chunk is only fetched when the consumer asks for it
 * (so a slow HTTP client slows the query down instead of filling memory). Each fetch runs under the
 * reader's query timeout. A chunk is handed over in slices of {@link SLICE_ROWS} reports with a turn of
 * the event loop before each, so an export being written never holds the one JS thread for long: with two
 * exports written at full speed, deep list pages fell from ~700 to ~35 requests/s with 503s (requests
 * waited behind whole-chunk serialisations past the pool's acquire timeout; measured at 1M reports).
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
    const rows = chunk.getRows();
    for (let at = 0; at < rows.length; at += SLICE_ROWS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      yield rows.slice(at, at + SLICE_ROWS).map(rowToReport);
    }
  }
}
