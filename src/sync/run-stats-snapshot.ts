import type { DuckDBConnection } from '@duckdb/node-api';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { fetchStats } from '../upstream/fetch-stats.js';
import type { Logger } from '../util/logger.js';
import { emptyCounters } from '../warehouse/run-counters.js';
import { recordStatsSnapshots } from '../warehouse/snapshots.js';
import { withTransaction } from '../warehouse/transaction.js';
import { warehouseWriteError } from '../warehouse/warehouse-write-error.js';
import { totalsFacts, warnOnDiff } from './export-finisher.js';
import { logFailure, openRunLog, pointOfNoReturn, runFailure } from './run-life.js';
import type { RunSummary } from './run-sync.js';

/** Options of {@link runStatsSnapshot}. */
export interface RunStatsSnapshotOptions {
  connection: DuckDBConnection;
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  signal?: AbortSignal | undefined;
  /** As `RunSyncOptions.onCommit`: the snapshot is past its last stop point and commits now. */
  onCommit?: ((runId: string, records: number) => void) | undefined;
}

/**
 * `reports-sync sync --source stats`: one run (`sync_runs` row with `source = 'stats'`, job `snapshot-stats`)
 * that snapshots the upstream `/stats` body and the warehouse's own counters into `stats_snapshots` and
 * `stats_values`, and records both totals and their difference, all in one transaction (docs/how-a-sync-works.md).
 * Export runs take the same snapshots in their own finishing transaction (export-finisher.ts); this one
 * exists to watch the counters between exports.
 *
 * The same life cycle as an export run (run-life.ts): never throws for a failed fetch (the run is recorded
 * `failed` with the error, or `aborted` when its signal stopped it, like runSync).
 *
 * @throws SyncError `WAREHOUSE_WRITE` (or the run's error) when not even the failure can be recorded
 */
export async function runStatsSnapshot(options: RunStatsSnapshotOptions): Promise<RunSummary> {
  const { connection: c, config } = options;
  const run = await openRunLog({ ...options, job: 'snapshot-stats', source: 'stats' });
  const { log, logger } = run;
  const counters = emptyCounters();
  const summary = () => ({
    runId: run.runId,
    source: 'stats',
    counters,
    durationMs: Date.now() - run.started.getTime(),
    attempts: 1,
  });
  try {
    const stats = await fetchStats({ ...options, logger });
    pointOfNoReturn(options, run.runId, 0);
    const now = new Date();
    const totals = await withTransaction(c, async () => {
      const totals = await recordStatsSnapshots(c, {
        runId: run.runId,
        takenAt: now,
        upstream: stats.body,
        upstreamText: stats.text,
        totalPath: config.statsTotalPath,
        maxValues: config.statsMaxValues,
      });
      await log.succeed(counters, { ...totalsFacts(totals), complete: true, attempts: 1 });
      return totals;
    });
    warnOnDiff(totals, config.statsDiffWarn, logger);
    logger.info({ upstreamTotal: totals.upstream, warehouseTotal: totals.warehouse }, 'stats snapshot taken');
    return { ...summary(), status: 'succeeded' };
  } catch (err) {
    const failure = runFailure(err, { ...options, warehousePath: run.warehousePath });
    try {
      await log.fail(failure.status, failure.error.toJSON());
    } catch (recordErr) {
      // As an export run's (fail-run.ts): the run stays `running` until the next start closes it.
      logger.error({ err: failure.error.toJSON() }, 'run failed and could not be recorded');
      throw warehouseWriteError(recordErr, run.warehousePath) ?? failure.error;
    }
    logFailure(logger, failure, counters);
    return { ...summary(), ...failure };
  }
}
