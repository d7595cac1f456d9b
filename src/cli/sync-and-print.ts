import type { Config } from '../config/config.js';
import { createProgressReporter, type ProgressReporter } from '../sync/progress-reporter.js';
import type { RunSummary } from '../sync/run-sync.js';
import { syncTarget, targetSteps, type SyncTarget } from '../sync/sync-sources.js';
import { fetchStats } from '../upstream/fetch-stats.js';
import { createHttpAgent } from '../upstream/http-agent.js';
import { statsTotal } from '../schema/flatten-stats.js';
import type { Logger } from '../util/logger.js';
import { screenWidth } from '../util/screen.js';
import { statusLineFor } from '../util/status-line.js';
import { openMigratedWarehouse } from '../warehouse/open-migrated.js';
import { PostgresPublisher } from '../warehouse/postgres/postgres-publisher.js';
import { changedAny } from '../warehouse/run-counters.js';
import { AlertCenter } from '../alerts/alert-center.js';
import { EXIT_FAILURE, EXIT_SUCCESS, signalExitCode } from './exit-codes.js';
import { printRunSummaries } from './print-summary.js';
import { runSummariesJson } from './summary-json.js';
import { onStopSignal } from './stop-signal.js';

/** Options of {@link syncAndPrint}. */
export interface SyncAndPrintOptions {
  /** Print one JSON document (runs, counters, rejects by reason, warehouse totals) instead of the text. */
  json?: boolean;
  /**
   * Starts the upstream once the warehouse is open (the demo's simulator), so a locked warehouse is found
   * before anything starts: returns the config to sync with and how to stop it (after the summary).
   */
  upstream?: () => Promise<{ config: Config; close: () => Promise<void> }>;
  /** Printed once the warehouse is open and the upstream started (e.g. a header naming both). */
  beforeSync?: (warehousePath: string, config: Config) => void;
}

/**
 * The body of the one-shot `sync` and `demo` commands: opens the warehouse (one instance), runs the
 * target's jobs with progress reporting (a status line on a terminal, log lines elsewhere), prints their
 * summaries on stdout and sets the exit code from what the run log holds ({@link exitCodeOf}): 0 every run
 * of the target succeeded, 1 one failed, 130/143 when SIGINT/SIGTERM stopped it before all of them
 * succeeded.
 *
 * A signal while a run reads stops it: it is recorded `aborted`, nothing of it merged (its batch files are
 * removed), and no later run starts; past `REPORTS_SHUTDOWN_GRACE_MS`, or on a second signal, the process
 * exits at once (the run row is then closed as `aborted` by the next start). A signal once a run is past its
 * last stop point (its merge) does not cut the merge: it commits, and the exit code is that of the
 * committed outcome (0 when every run succeeded); only a second signal exits during it.
 *
 * @throws SyncError `WAREHOUSE_LOCKED` (exit 2) or `WAREHOUSE_OPEN` when the warehouse cannot be opened
 */
export async function syncAndPrint(
  givenConfig: Config,
  logger: Logger,
  target: SyncTarget,
  options: SyncAndPrintOptions = {},
): Promise<void> {
  let config = givenConfig;
  const warehouse = await openMigratedWarehouse(config);
  const dispatcher = createHttpAgent(config);
  const alerts = new AlertCenter({ warehouse, config, logger });
  // A run the last process left unfinished (an out-of-memory kill) is news before this one starts: a job
  // killed every time would otherwise never be heard of.
  if (warehouse.interruptedRuns.length > 0) await alerts.afterRuns(warehouse.interruptedRuns);
  let upstream: { close: () => Promise<void> } | undefined;
  const controller = new AbortController();
  let progress: ProgressReporter | undefined;
  // The run past its last stop point (merging, committing), if any; reset when the next run starts.
  let committing: string | undefined;
  let ended = false;
  const stopSignal = onStopSignal({
    graceMs: config.shutdownGraceMs,
    graceApplies: () => committing === undefined && !ended,
    onStop: (signal) => {
      progress?.done();
      if (ended) logger.warn({ signal }, 'signal received after the runs ended: exiting with their outcome');
      else if (committing !== undefined) {
        logger.warn(
          { signal, runId: committing },
          'signal received while the run merges: a merge is never cut, so it commits and is recorded as it ends; ' +
            'no later run starts (a second signal exits at once)',
        );
      } else {
        logger.warn(
          { signal },
          'signal received: stopping the sync; the run in progress is not merged and is recorded as aborted',
        );
      }
      controller.abort();
    },
    onGraceOver: (signal) =>
      committing === undefined
        ? logger.error(
            { signal },
            'the sync did not stop in time: exiting now; the run in progress is not merged (the next start closes it as aborted)',
          )
        : logger.error(
            { signal, runId: committing },
            'second signal: exiting now while the run commits; whether it committed shows in `reports-sync status`',
          ),
  });
  try {
    if (options.upstream) {
      const started = await options.upstream();
      upstream = started;
      config = started.config;
    }
    options.beforeSync?.(warehouse.path, config);
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
            .then((stats) => reporter.setTotal(statsTotal(stats.body, config.statsTotalPath)))
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
        onStep: () => (committing = undefined),
        onCommit: (runId, records) => {
          committing = runId;
          if (records > 0) reporter.merging(runId, records);
        },
      });
    } finally {
      ended = true;
      reporter.done();
      if (totalAsked && !controller.signal.aborted) controller.abort();
      await totalAsked;
    }
    // Once the runs' outcomes are committed; webhooks are sent meanwhile (bounded wait in `finally`).
    await alerts.afterRuns(summaries.map((s) => s.runId));
    // PostgreSQL serves what the runs committed; down or refusing, it never fails the sync (logged).
    if (summaries.some((s) => s.status === 'succeeded')) {
      await new PostgresPublisher(warehouse, config, logger).afterRuns(
        summaries.some((s) => s.source === 'stats' || changedAny(s.counters)),
      );
    }
    const connection = await warehouse.connect();
    try {
      if (options.json) {
        process.stdout.write(`${JSON.stringify(await runSummariesJson(connection, summaries), null, 2)}\n`);
      } else {
        await printRunSummaries(connection, summaries, process.stdout, screenWidth(process.stdout));
      }
    } finally {
      connection.closeSync();
    }
    const signal = stopSignal.received();
    process.exitCode = exitCodeOf(summaries, targetSteps(target).length, signal);
    if (signal) logStop(logger, signal, summaries, process.exitCode);
  } finally {
    stopSignal.dispose();
    await alerts.close(config.alertDrainMs);
    await dispatcher.close();
    await upstream?.close();
    warehouse.close();
  }
}

/**
 * The exit status of a one-shot sync from its runs as recorded: 0 when all `steps` runs of the target ran
 * and succeeded (also when a signal came after their commits), the signal's status (130/143) when one was
 * aborted or the signal kept one from starting, 1 when one failed.
 */
export function exitCodeOf(
  summaries: readonly RunSummary[],
  steps: number,
  signal: NodeJS.Signals | undefined,
): number {
  const stopped = signal ? signalExitCode(signal) : EXIT_FAILURE;
  if (summaries.some((s) => s.status === 'aborted')) return stopped;
  if (summaries.some((s) => s.status !== 'succeeded')) return EXIT_FAILURE;
  return summaries.length < steps ? stopped : EXIT_SUCCESS;
}

/** The last word on a signal: what it did to the runs, as the run log holds them. */
function logStop(
  logger: Logger,
  signal: NodeJS.Signals,
  summaries: readonly RunSummary[],
  code: number,
): void {
  const runs = summaries.map((s) => `${s.runId}: ${s.status}`);
  const aborted = summaries.filter((s) => s.status === 'aborted').map((s) => s.runId);
  const message =
    code === EXIT_SUCCESS
      ? 'the signal came once the runs were committing: every run succeeded'
      : aborted.length > 0
        ? `stopped by the signal: ${aborted.join(', ')} recorded aborted, nothing of it merged`
        : code === EXIT_FAILURE
          ? 'a run failed (see its error)'
          : 'stopped by the signal before every run of the target started';
  // The summary above says the same on a terminal: `outcome` keeps this out of its brief log lines.
  logger.warn({ signal, runs, exitCode: code, outcome: 'stopped' }, message);
}
