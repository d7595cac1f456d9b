import type { DuckDBConnection } from '@duckdb/node-api';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { fetchStats } from '../upstream/fetch-stats.js';
import { safeUrl } from '../util/safe-url.js';
import { errorMessage, SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { emptyCounters } from '../warehouse/run-counters.js';
import { finishRun, newRunId, saveFacts, startRun } from '../warehouse/runs.js';
import { recordStatsSnapshots } from '../warehouse/snapshots.js';
import { totalsFacts, warnOnDiff } from './export-finisher.js';
import type { RunSummary } from './run-sync.js';
import { withTransaction } from '../warehouse/transaction.js';

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
 * Never throws for a failed fetch: the run is recorded `failed` with the error, like runSync.
 */
export async function runStatsSnapshot(options: RunStatsSnapshotOptions): Promise<RunSummary> {
  const { connection: c, config } = options;
  const started = new Date();
  const runId = newRunId('stats', started);
  const logger = options.logger.child({ runId, job: 'snapshot-stats', source: 'stats' });
  await startRun(c, {
    runId,
    job: 'snapshot-stats',
    source: 'stats',
    upstreamUrl: config.baseUrl === undefined ? undefined : safeUrl(config.baseUrl).replace(/\/$/, ''),
    startedAt: started,
  });
  const counters = emptyCounters();
  try {
    const stats = await fetchStats({ ...options, logger });
    if (options.signal?.aborted) throw new SyncError('RUN_ABORTED', 'the run was stopped before its commit');
    options.onCommit?.(runId, 0);
    const now = new Date();
    const totals = await withTransaction(c, async () => {
      const totals = await recordStatsSnapshots(c, { runId, takenAt: now, upstream: stats.body });
      await saveFacts(c, runId, { ...totalsFacts(totals), complete: true, attempts: 1 });
      await finishRun(c, runId, 'succeeded');
      return totals;
    });
    warnOnDiff(totals, config.statsDiffWarn, logger);
    logger.info({ upstreamTotal: totals.upstream, warehouseTotal: totals.warehouse }, 'stats snapshot taken');
    return {
      runId,
      source: 'stats',
      status: 'succeeded',
      counters,
      durationMs: Date.now() - started.getTime(),
      attempts: 1,
    };
  } catch (err) {
    const error =
      err instanceof SyncError ? err : new SyncError('RUN_FAILED', errorMessage(err), { cause: err });
    const aborted = options.signal?.aborted === true;
    await finishRun(c, runId, aborted ? 'aborted' : 'failed', error.toJSON());
    // As close-run.ts: an asked-for stop is no error; `outcome` marks the run's last word.
    if (aborted) logger.warn({ err: error.toJSON(), outcome: 'aborted' }, 'run aborted');
    else logger.error({ err: error.toJSON(), outcome: 'failed' }, 'run failed');
    return {
      runId,
      source: 'stats',
      status: aborted ? 'aborted' : 'failed',
      counters,
      durationMs: Date.now() - started.getTime(),
      attempts: 1,
      error,
    };
  }
}
