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
  /** Numeric leaves of the upstream body not written to `stats_values` (past `maxValues`); 0 when none. */
  valuesLeftOut: number;
}

/**
 * Stores the stats snapshots of a run (docs/how-a-sync-works.md `stats_snapshots`/`stats_values`): the upstream body
 * as it came (any shape, as JSON) when there is one, and the warehouse's own counters ({@link warehouseStats},
 * `source = 'warehouse'`), each with its numeric leaves flattened into `stats_values` (`byStatus.SUBMITTED`):
 * the first `maxValues` (`REPORTS_STATS_MAX_VALUES`) in body order, so a body of 300,000 counters does not
 * add 300,000 rows every run (the body stays whole, and the total is read from it).
 * Call inside the transaction that finishes the run, after the merge and tombstones, so the warehouse side
 * describes the committed state.
 *
 * @param snapshot.takenAt the snapshot time (the run's merge time)
 */
export async function recordStatsSnapshots(
  connection: DuckDBConnection,
  snapshot: {
    runId: string;
    takenAt: Date;
    upstream?: unknown;
    /** The upstream body's JSON text as stored (numbers as sent); `JSON.stringify(upstream)` when absent. */
    upstreamText?: string | undefined;
    totalPath?: string | undefined;
    maxValues: number;
  },
): Promise<SnapshotTotals> {
  const own = await ownCounters(connection);
  const { runId, takenAt, maxValues } = snapshot;
  const valuesLeftOut =
    snapshot.upstream === undefined
      ? 0
      : await saveSnapshot(
          connection,
          { runId, takenAt, maxValues },
          'upstream',
          snapshot.upstream,
          snapshot.upstreamText,
        );
  await saveSnapshot(connection, { runId, takenAt, maxValues: Infinity }, 'warehouse', own);
  const upstream =
    snapshot.upstream === undefined ? undefined : statsTotal(snapshot.upstream, snapshot.totalPath);
  const diff = upstream === undefined ? undefined : upstream - own.total;
  return { upstream, warehouse: own.total, diff, valuesLeftOut };
}

/**
 * Stores one snapshot (`text`, else the body's JSON) and its first `maxValues` numeric leaves; returns the
 * count of leaves left out.
 */
async function saveSnapshot(
  connection: DuckDBConnection,
  at: { runId: string; takenAt: Date; maxValues: number },
  source: 'upstream' | 'warehouse',
  body: unknown,
  text: string = JSON.stringify(body),
): Promise<number> {
  const { runId, takenAt } = at;
  const taken = takenAt.toISOString();
  await connection.run(
    `INSERT INTO stats_snapshots (taken_at, run_id, source, body) VALUES ($taken::TIMESTAMPTZ, $run, $source, $body::JSON)`,
    // An upstream body may echo the key: the stored snapshot never carries it (redact.ts).
    { taken, run: runId, source, body: redactSecrets(text) },
  );
  const all = flattenStats(body);
  const values = all.length > at.maxValues ? all.slice(0, at.maxValues) : all;
  if (values.length === 0) return 0;
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
  return all.length - values.length;
}
