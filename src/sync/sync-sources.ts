import type { Clock } from '../warehouse/merge-time.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { SyncError } from '../util/errors.js';
import { evictCachedBlocks } from '../warehouse/memory-limit.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import type { ExportSource } from './export-source.js';
import { chainHooks, driftHooks } from './drift-hooks.js';
import { exportFinisher } from './export-finisher.js';
import { runStatsSnapshot } from './run-stats-snapshot.js';
import { runSync, type Progress, type RunSummary } from './run-sync.js';
import { csvSource } from './sources/csv-source.js';
import type { SyncTarget } from './sync-targets.js';
import { ndjsonSource } from './sources/ndjson-source.js';
import { recentSource } from './sources/recent-source.js';

export { SYNC_TARGETS, type SyncTarget } from './sync-targets.js';

const EXPORTS: Record<string, ExportSource> = { ndjson: ndjsonSource, csv: csvSource };

/** Options of {@link syncTarget}. */
export interface SyncTargetOptions {
  warehouse: Warehouse;
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  target: SyncTarget;
  /** `sync_runs.job` of the export runs (the daemon's job name); default `sync-<source>`. */
  job?: string;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** The clock of the export runs' merge time (default: the system clock). */
  clock?: Clock | undefined;
  /**
   * Called when a run is past its last stop point and commits now (`records` to merge): see
   * `RunSyncOptions.onCommit`. A signal after it no longer aborts that run.
   */
  onCommit?: (runId: string, records: number) => void;
  /** Called before each run starts (`step`: one of {@link targetSteps}). */
  onStep?: (step: string) => void;
}

/**
 * Runs the jobs a sync target stands for, one after the other, each on its own connection of the shared
 * warehouse. Stops at the first failed run, and starts no run once `signal` is aborted. Returns the
 * summary of every run it started: fewer than {@link targetSteps} when it stopped early.
 */
export async function syncTarget(options: SyncTargetOptions): Promise<RunSummary[]> {
  const summaries: RunSummary[] = [];
  for (const step of targetSteps(options.target)) {
    if (options.signal?.aborted) break;
    options.onStep?.(step);
    const connection = await options.warehouse.connect();
    try {
      const { config, dispatcher, logger, signal } = options;
      let summary: RunSummary;
      if (step === 'stats') {
        summary = await runStatsSnapshot({
          connection,
          config,
          dispatcher,
          logger,
          signal,
          onCommit: options.onCommit,
        });
      } else if (step === 'recent') {
        summary = await runRecent({ ...options, connection });
      } else {
        const source = EXPORTS[step];
        if (!source) throw new SyncError('SOURCE_UNKNOWN', `Unknown source ${step}`);
        const finisher = exportFinisher({ config, dispatcher, logger, source, signal });
        const drift = driftHooks({ connection, config, logger, source: source.name });
        const side = await options.warehouse.connect();
        summary = await runSync({
          evictCache: () => evictCachedBlocks(side),
          connection,
          config,
          dispatcher,
          logger,
          source,
          job: options.job,
          signal,
          onProgress: options.onProgress,
          clock: options.clock,
          upstreamTotal: finisher.upstreamTotal,
          onCommit: options.onCommit,
          // The contract is checked before the finisher's work; fields are found gone after its tombstones.
          beforeMerge: chainHooks(drift, finisher).beforeMerge,
          afterMerge: chainHooks(finisher, drift).afterMerge,
        }).finally(() => side.closeSync());
        summary.drift = drift.events();
      }
      summaries.push(summary);
      if (summary.status !== 'succeeded') break;
    } finally {
      connection.closeSync();
    }
  }
  return summaries;
}

/** A `recent` run: its page lookups use a connection of their own (the run's is busy staging). */
async function runRecent(options: SyncTargetOptions & { connection: DuckDBConnection }): Promise<RunSummary> {
  const lookup = await options.warehouse.connect();
  const { connection, config, logger } = options;
  const drift = driftHooks({ connection, config, logger, source: 'recent' });
  try {
    const summary = await runSync({
      connection: options.connection,
      config: options.config,
      dispatcher: options.dispatcher,
      logger: options.logger,
      source: recentSource(lookup),
      job: options.job,
      signal: options.signal,
      onProgress: options.onProgress,
      beforeMerge: drift.beforeMerge,
      afterMerge: drift.afterMerge,
      onCommit: options.onCommit,
    });
    summary.drift = drift.events();
    return summary;
  } finally {
    lookup.closeSync();
  }
}

/** The runs a sync target stands for, in order (`all`: NDJSON then CSV). */
export function targetSteps(target: SyncTarget): string[] {
  switch (target) {
    case 'default':
    case 'ndjson':
      return ['ndjson'];
    case 'csv':
      return ['csv'];
    case 'stats':
      return ['stats'];
    case 'all':
      return ['ndjson', 'csv'];
    case 'recent':
      return ['recent'];
  }
}
