import type { DuckDBConnection } from '@duckdb/node-api';
import { sortedCounts, type ReportStats } from '../schema/stats.js';

/**
 * The warehouse's own counters over its current reports (`removed_at IS NULL`), in exactly the shape the
 * upstream simulator's `/stats` has (`computeStats`: `total`, `byStatus`, `byDestination`, keys in code-unit
 * order), so the two snapshots compare metric by metric in `stats_values`.
 */
export async function ownCounters(connection: DuckDBConnection): Promise<ReportStats> {
  const rows = (
    await connection.runAndReadAll(
      `SELECT 'status' AS kind, status AS key, count(*) AS n FROM reports WHERE removed_at IS NULL GROUP BY status
       UNION ALL
       SELECT 'destination', destination, count(*) FROM reports WHERE removed_at IS NULL GROUP BY destination`,
    )
  ).getRowObjectsJS();
  const byStatus = new Map<string, number>();
  const byDestination = new Map<string, number>();
  let total = 0;
  for (const r of rows) {
    const n = Number(r.n);
    if (r.kind === 'status') {
      byStatus.set(String(r.key), n);
      total += n;
    } else byDestination.set(String(r.key), n);
  }
  return { total, byStatus: sortedCounts(byStatus), byDestination: sortedCounts(byDestination) };
}
