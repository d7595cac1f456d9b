import type { Config } from '../config/config.js';
import { createProgressReporter, type ProgressReporter } from '../sync/progress-reporter.js';
import { syncTarget, type SyncTarget } from '../sync/sync-sources.js';
import { fetchStats } from '../upstream/fetch-stats.js';
import { createHttpAgent } from '../upstream/http-agent.js';
import { statsTotal } from '../schema/flatten-stats.js';
import type { Logger } from '../util/logger.js';
import { statusLineFor } from '../util/status-line.js';
import { openMigratedWarehouse } from '../warehouse/open-migrated.js';
import { EXIT_FAILURE, EXIT_SUCCESS } from './exit-codes.js';
import { printRunSummaries } from './print-summary.js';
import { runSummariesJson } from './summary-json.js';
import { onStopSignal } from './stop-signal.js';

/** Options of {@link syncAndPrint}. */
export interface SyncAndPrintOptions {
  /** Print one JSON document (runs, counters, rejects by reason, warehouse totals) instead of the text. */
  json?: boolean;
  /** Printed once the warehouse is open (e.g. a header naming it). */
  beforeSync?: (warehousePath: string) => void;
}

/**
 * The body of the one-shot `sync` and `demo` commands: opens the warehouse (one instance), runs the
 * target's jobs with progress reporting (a status line on a terminal, log lines elsewhere), prints their
 * summaries on stdout and sets the exit code: 0 every run succeeded, 1 otherwise, 130/143 when SIGINT/SIGTERM
 * stopped it. A signal stops reading and records the run `aborted` (its batch files are removed); past
 * `REPORTS_SHUTDOWN_GRACE_MS`, or on a second signal, the process exits at once.
 *
 * @throws SyncError `WAREHOUSE_LOCKED` (exit 2) or `WAREHOUSE_OPEN` when the warehouse cannot be opened
 */
export async function syncAndPrint(
  config: Config,
  logger: Logger,
  target: SyncTarget,
  options: SyncAndPrintOptions = {},
): Promise<void> {
  const warehouse = await openMigratedWarehouse(config);
  const dispatcher = createHttpAgent(config);
  const controller = new AbortController();
  let progress: ProgressReporter | undefined;
  const stopSignal = onStopSignal({
    graceMs: config.shutdownGraceMs,
    onStop: (signal) => {
      progress?.done();
      logger.warn({ signal }, 'signal received: stopping the sync (the run is recorded as aborted)');
      controller.abort();
    },
    onGraceOver: (signal) => logger.error({ signal }, 'the sync did not stop in time: exiting now'),
  });
  try {
    options.beforeSync?.(warehouse.path);
    const tty = Boolean(process.stderr.isTTY) && config.logPretty !== false;
    progress = createProgressReporter({
      logger,
      intervalMs: config.progressIntervalMs,
      line: tty ? statusLineFor(process.stderr) : undefined,
    });
    const reporter = progress;
    // On a terminal the upstream's /stats total gives a percentage and an ETA; it is asked for meanwhile.
    const totalAsked =
      tty && target !== 'stats'
        ? fetchStats({
            config,
            dispatcher,
            logger: logger.child({}, { level: 'silent' }),
            signal: controller.signal,
          })
            .then((stats) => reporter.setTotal(statsTotal(stats.body)))
            .catch(() => undefined)
        : undefined;
    let summaries;
    try {
      summaries = await syncTarget({
        warehouse,
        config,
        dispatcher,
        logger,
        target,
        signal: controller.signal,
        onProgress: (p) => reporter.update(p),
        onMerge: (runId, records) => reporter.merging(runId, records),
      });
    } finally {
      reporter.done();
      if (totalAsked && !controller.signal.aborted) controller.abort();
      await totalAsked;
    }
    const connection = await warehouse.connect();
    try {
      if (options.json) {
        process.stdout.write(`${JSON.stringify(await runSummariesJson(connection, summaries), null, 2)}\n`);
      } else {
        await printRunSummaries(connection, summaries, process.stdout);
      }
    } finally {
      connection.closeSync();
    }
    process.exitCode =
      stopSignal.received() !== undefined
        ? stopSignal.exitCode()
        : summaries.every((s) => s.status === 'succeeded')
          ? EXIT_SUCCESS
          : EXIT_FAILURE;
  } finally {
    stopSignal.dispose();
    await dispatcher.close();
    warehouse.close();
  }
}
