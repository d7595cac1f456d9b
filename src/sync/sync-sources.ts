import type { Clock } from '../warehouse/merge-time.js';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import type { ExportSource } from './export-source.js';
import { exportFinisher } from './export-finisher.js';
import { runStatsSnapshot } from './run-stats-snapshot.js';
import { runSync, type Progress, type RunSummary } from './run-sync.js';
import { csvSource } from './sources/csv-source.js';
import type { SyncTarget } from './sync-targets.js';
import { ndjsonSource } from './sources/ndjson-source.js';

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
  /** Called when an export run has read its export and its merge starts (`records` loaded records). */
  onMerge?: (runId: string, records: number) => void;
}

/**
 * Runs the jobs a sync target stands for, one after the other, each on its own connection of the shared
 * warehouse. Stops at the first failed run. Returns every run's summary.
 */
export async function syncTarget(options: SyncTargetOptions): Promise<RunSummary[]> {
  const summaries: RunSummary[] = [];
  for (const step of stepsFor(options.target)) {
    const connection = await options.warehouse.connect();
    try {
      const { config, dispatcher, logger, signal } = options;
      let summary: RunSummary;
      if (step === 'stats') {
        summary = await runStatsSnapshot({ connection, config, dispatcher, logger, signal });
      } else {
        const source = EXPORTS[step];
        if (!source) throw new SyncError('SOURCE_UNKNOWN', `Unknown source ${step}`, { exitCode: 2 });
        const finisher = exportFinisher({ config, dispatcher, logger, source, signal });
        summary = await runSync({
          connection,
          config,
          dispatcher,
          logger,
          source,
          job: options.job,
          signal,
          onProgress: options.onProgress,
          clock: options.clock,
          ...finisher,
          beforeMerge: async (ctx) => {
            await finisher.beforeMerge(ctx);
            options.onMerge?.(ctx.runId, ctx.counters.recordsLoaded);
          },
        });
      }
      summaries.push(summary);
      if (summary.status !== 'succeeded') break;
    } finally {
      connection.closeSync();
    }
  }
  return summaries;
}

function stepsFor(target: SyncTarget): string[] {
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
  }
}
