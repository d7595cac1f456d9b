import type { DuckDBConnection } from '@duckdb/node-api';
import { statsOfGroups, type ReportStats } from '../schema/stats.js';
import { currentCountsRelation } from '../warehouse/current-counts.js';
import { withQueryTimeout } from './query-timeout.js';

/**
 * The `/reports/stats` counters of the current (not removed) reports, in the simulator's shape: the
 * warehouse groups and counts, and the shared `statsOfGroups` builds the object (same keys, same sorted
 * key order as the simulator's `computeStats`). The reader caches it per data state. The counts
 * come from the serving index when the warehouse has one (a few thousand rows, not every report).
 *
 * @throws SyncError `READER_QUERY_TIMEOUT` past `timeoutMs`
 */
export async function warehouseStats(connection: DuckDBConnection, timeoutMs: number): Promise<ReportStats> {
  const reader = await withQueryTimeout(connection, timeoutMs, 'The stats query', async () =>
    connection.runAndReadAll(
      `SELECT status, destination, reports AS n FROM (${await currentCountsRelation(connection)})`,
    ),
  );
  const groups = reader.getRows().map((row) => ({
    status: String(row[0]),
    destination: String(row[1]),
    n: Number(row[2]),
  }));
  return statsOfGroups(groups);
}
