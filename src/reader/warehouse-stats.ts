import type { DuckDBConnection } from '@duckdb/node-api';
import { statsOfGroups, type ReportStats } from '../schema/stats.js';
import { withQueryTimeout } from './query-timeout.js';
import { servingVersion } from './report-pages.js';
import { reportWhere } from './report-rows.js';

/**
 * The `/reports/stats` counters of the current (not removed) reports, in the simulator's shape: the
 * warehouse groups and counts, and the shared `statsOfGroups` builds the object (same keys, same sorted
 * key order as the simulator's `computeStats`). The reader caches it per data state. The counts
 * come from the serving index when the warehouse has one (a few thousand rows, not every report).
 *
 * @throws SyncError `READER_QUERY_TIMEOUT` past `timeoutMs`
 */
export async function warehouseStats(connection: DuckDBConnection, timeoutMs: number): Promise<ReportStats> {
  const where = reportWhere();
  const reader = await withQueryTimeout(connection, timeoutMs, 'The stats query', async () =>
    (await servingVersion(connection)) === null
      ? connection.runAndReadAll(
          `SELECT status, destination, count(*)::DOUBLE AS n FROM report_rows ${where.sql} GROUP BY ALL`,
          where.params,
        )
      : connection.runAndReadAll(
          'SELECT status, destination, sum(reports)::DOUBLE AS n FROM reader_page_counts GROUP BY ALL',
        ),
  );
  const groups = reader.getRows().map((row) => ({
    status: String(row[0]),
    destination: String(row[1]),
    n: Number(row[2]),
  }));
  return statsOfGroups(groups);
}
