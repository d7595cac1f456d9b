import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import type { ExportSource } from './export-source.js';
import { runSync, type Progress, type RunSummary } from './run-sync.js';
import { ndjsonSource } from './sources/ndjson-source.js';

/** What `reports-sync sync --source` accepts. `default` = NDJSON then stats; `all` adds CSV. */
export const SYNC_TARGETS = ['default', 'ndjson'] as const;
export type SyncTarget = (typeof SYNC_TARGETS)[number];

const EXPORTS: Record<string, ExportSource> = { ndjson: ndjsonSource };

/** Options of {@link syncTarget}. */
export interface SyncTargetOptions {
  warehouse: Warehouse;
  config: Config;
  dispatcher: Dispatcher;
  logger: Logger;
  target: SyncTarget;
  /** `sync_runs.job` of every run (the daemon's job name); default `sync-<source>`. */
  job?: string;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
}

/**
 * Runs the jobs a sync target stands for, one after the other, each on its own connection of the shared
 * warehouse. Stops at the first failed run. Returns every run's summary.
 */
export async function syncTarget(options: SyncTargetOptions): Promise<RunSummary[]> {
  const steps = stepsFor(options.target);
  const summaries: RunSummary[] = [];
  for (const step of steps) {
    const source = EXPORTS[step];
    if (!source) throw new SyncError('SOURCE_UNKNOWN', `Unknown source ${step}`, { exitCode: 2 });
    const connection = await options.warehouse.connect();
    try {
      const summary = await runSync({
        connection,
        config: options.config,
        dispatcher: options.dispatcher,
        logger: options.logger,
        source,
        job: options.job,
        signal: options.signal,
        onProgress: options.onProgress,
      });
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
  }
}
