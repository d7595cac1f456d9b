import { redactSecrets } from '../util/redact.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import { flattenStats, statsTotal } from '../schema/flatten-stats.js';
import { ownCounters } from './own-counters.js';

/** Totals of a pair of snapshots, as `sync_runs.stats_total_*` stores them. */
export interface SnapshotTotals {
  /** `total` of the upstream body, when there was a body with a numeric `total`. */
  upstream: number | undefined;
  /** Current reports in the warehouse. */
  warehouse: number;
  /** `upstream - warehouse`, when the upstream total is known. */
  diff: number | undefined;
}

/**
 * Stores the stats snapshots of a run (docs/how-a-sync-works.md `stats_snapshots`/`stats_values`): the upstream body
 * as it came (any shape, as JSON) when there is one, and the warehouse's own counters ({@link warehouseStats},
 * `source = 'warehouse'`), each with every numeric leaf flattened into `stats_values` (`byStatus.SUBMITTED`).
 * Call inside the transaction that finishes the run, after the merge and tombstones, so the warehouse side
 * describes the committed state.
 *
 * @param takenAt the snapshot time (the run's merge time)
 */
export async function recordStatsSnapshots(
  connection: DuckDBConnection,
  snapshot: { runId: string; takenAt: Date; upstream?: unknown; totalPath?: string | undefined },
): Promise<SnapshotTotals> {
  const own = await ownCounters(connection);
  if (snapshot.upstream !== undefined) {
    await saveSnapshot(connection, snapshot.runId, snapshot.takenAt, 'upstream', snapshot.upstream);
  }
  await saveSnapshot(connection, snapshot.runId, snapshot.takenAt, 'warehouse', own);
  const upstream =
    snapshot.upstream === undefined ? undefined : statsTotal(snapshot.upstream, snapshot.totalPath);
  return { upstream, warehouse: own.total, diff: upstream === undefined ? undefined : upstream - own.total };
}

async function saveSnapshot(
  connection: DuckDBConnection,
  runId: string,
  takenAt: Date,
  source: 'upstream' | 'warehouse',
  body: unknown,
): Promise<void> {
  const taken = takenAt.toISOString();
  await connection.run(
    `INSERT INTO stats_snapshots (taken_at, run_id, source, body) VALUES ($taken::TIMESTAMPTZ, $run, $source, $body::JSON)`,
    // An upstream body may echo the key: the stored snapshot never carries it (redact.ts).
    { taken, run: runId, source, body: redactSecrets(JSON.stringify(body)) },
  );
  const values = flattenStats(body);
  if (values.length === 0) return;
  const appender = await connection.createAppender('stats_values');
  try {
    for (const v of values) {
      appender.appendVarchar(taken);
      appender.appendVarchar(runId);
      appender.appendVarchar(source);
      appender.appendVarchar(redactSecrets(v.metric));
      appender.appendDouble(v.value);
      appender.endRow();
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}
