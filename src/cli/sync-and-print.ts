import type { Config } from '../config/config.js';
import { createProgressReporter } from '../sync/progress-reporter.js';
import { syncTarget, type SyncTarget } from '../sync/sync-sources.js';
import { createHttpAgent } from '../upstream/http-agent.js';
import type { Logger } from '../util/logger.js';
import { openMigratedWarehouse } from '../warehouse/open-migrated.js';
import { printRunSummaries } from './print-summary.js';

/**
 * The body of the one-shot `sync` and `demo` commands: opens the warehouse (one instance), runs the
 * target's jobs with progress reporting, prints their summaries on stdout and sets the exit code
 * (0 every run succeeded, 1 otherwise). `beforeSync` may print a header once the warehouse is open.
 *
 * @throws SyncError `WAREHOUSE_LOCKED` (exit 2) or `WAREHOUSE_OPEN` when the warehouse cannot be opened
 */
export async function syncAndPrint(
  config: Config,
  logger: Logger,
  target: SyncTarget,
  beforeSync?: (warehousePath: string) => void,
): Promise<void> {
  const warehouse = await openMigratedWarehouse(config);
  const dispatcher = createHttpAgent(config);
  try {
    beforeSync?.(warehouse.path);
    const progress = createProgressReporter({ logger, intervalMs: config.progressIntervalMs });
    const summaries = await syncTarget({
      warehouse,
      config,
      dispatcher,
      logger,
      target,
      onProgress: (p) => progress.update(p),
    });
    progress.done();
    const connection = await warehouse.connect();
    try {
      await printRunSummaries(connection, summaries, process.stdout);
    } finally {
      connection.closeSync();
    }
    process.exitCode = summaries.every((s) => s.status === 'succeeded') ? 0 : 1;
  } finally {
    await dispatcher.close();
    warehouse.close();
  }
}
