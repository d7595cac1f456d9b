import { setTimeout as sleep } from 'node:timers/promises';
import cron, { type ScheduledTask } from 'node-cron';
import type { Config } from '../config/config.js';
import { createProgressReporter } from '../sync/progress-reporter.js';
import { createHttpAgent } from '../upstream/http-agent.js';
import { errorMessage, SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import { openMigratedWarehouse, type MigratedWarehouse } from '../warehouse/open-migrated.js';
import { publishedDirFor } from '../warehouse/publish.js';
import { AlertCenter } from '../alerts/alert-center.js';
import { snapshotLag } from '../alerts/snapshot-lag.js';
import { postgresLag } from '../alerts/postgres-lag.js';
import { Watchdog } from './watchdog.js';
import { nextRuns } from './cron-times.js';
import { startHttpServer, type HttpServer } from './http-server.js';
import type { JobQueue } from './job-queue.js';
import { JobRunner, type JobRunnerParts } from './job-runner.js';
import { jobsDueAtStart } from './jobs-due.js';
import { lastRunsByJob, type JobRunHistory } from './last-runs.js';
import type { Job } from './load-jobs.js';

/** Options of {@link startDaemon}. */
export interface DaemonOptions {
  /** Parsed configuration: `baseUrl` (required), `warehouse`, `host`, `port`, `timezone`, `shutdownGraceMs`. */
  config: Config;
  logger: Logger;
  /** The jobs to schedule (see `loadJobs`); disabled ones are only logged. */
  jobs: readonly Job[];
  /** Where snapshots are published (default: the folder of `publishedPathFor`, `published/` next to the warehouse). */
  publishedDir?: string;
  /** The clock of the alerts and the watchdog (epoch ms; tests inject one). */
  clock?: () => number;
}

/** A running daemon. */
export interface Daemon {
  /** Base URL of the HTTP server (`/healthz`, the reader). */
  readonly url: string;
  readonly warehouse: Warehouse;
  /** The freshness and publish-lag watchdog (its `check()` runs one check now). */
  readonly watchdog: Watchdog;
  /**
   * Graceful stop (SIGTERM/SIGINT): no more scheduling, no new requests, the running job may finish
   * within `shutdownGraceMs` and is aborted after that (recorded as `aborted`) — unless its run is already
   * merging, which is never cut: it commits first. Then the database is closed. Idempotent; resolves when
   * everything is closed.
   */
  stop(reason?: string): Promise<void>;
  /**
   * Aborts the running job now, without waiting for the grace period (a second signal). Returns what that
   * does: `aborted` (its run is not merged, recorded `aborted`), `committing` (its run is past its last stop
   * point: the merge commits, it is never cut) or `idle` (no job runs).
   */
  abortNow(): 'aborted' | 'committing' | 'idle';
}

/**
 * Starts `reports-sync run` (docs/deployment.md): one process that owns the warehouse (one
 * `DuckDBInstance`, docs/how-a-sync-works.md) and runs
 * - the jobs of `jobs/` on their node-cron schedules (`noOverlap`, time zone `REPORTS_TZ`), one at a time
 *   through a single queue (the warehouse has one writer);
 * - a catch-up run at start of every job whose last success is older than its period;
 * - after each successful job, a published snapshot for analysts (`publishSnapshot`);
 * - the HTTP server (`/healthz`, the reader) on the same instance.
 *
 * @throws SyncError `CONFIG_INVALID` (no upstream), `WAREHOUSE_LOCKED` (another process holds the
 *   file), `HTTP_LISTEN`; nothing is left open when it throws
 */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { config, logger } = options;
  if (!config.baseUrl) {
    throw new SyncError(
      'CONFIG_INVALID',
      'No upstream configured: set REPORTS_BASE_URL (or pass --base-url) for reports-sync run',
    );
  }
  const parts = await openParts(options);
  // Deliveries a stopped process left pending, before this one raises any: read after, an event raised
  // here and still in flight was pending too, and was sent twice.
  await parts.alerts.resumePending();
  // A run the last process left unfinished (an out-of-memory kill) is news before any catch-up runs.
  if (parts.warehouse.interruptedRuns.length > 0)
    await parts.alerts.afterRuns(parts.warehouse.interruptedRuns);
  const runner = new JobRunner(parts, config, logger);
  const queue = runner.queue;
  let http: HttpServer | undefined;
  let tasks: ScheduledTask[] = [];
  try {
    http = await startHttpServer({
      warehouse: parts.warehouse,
      config,
      logger,
      host: config.host,
      port: config.port,
      info: {
        jobs: options.jobs,
        timezone: config.timezone,
        running: () => queue.running,
        pending: () => queue.pending,
        freshnessObjectives: () => parts.watchdog.objectives,
        publishLags: () => parts.watchdog.lags,
        unrecordedFailures: () => parts.alerts.unrecordedJobs,
      },
    });
    tasks = scheduleJobs(options.jobs, queue, config.timezone, logger);
    await catchUp(parts.warehouse, options.jobs, queue, config.timezone, logger);
  } catch (err) {
    // The one teardown, cut short: nothing ran yet that needs a grace period.
    await closeAll({ parts, tasks, http, queue: undefined }, 0);
    throw err;
  }
  for (const task of tasks) await task.start();
  // The first check; later ones on their own timer.
  void parts.watchdog.check();
  parts.watchdog.start(config.alertCheckIntervalMs);
  logStarted(logger, http.url, parts, options.jobs, config.timezone);
  const running = { parts, tasks, http, queue };
  let stopping: Promise<void> | undefined;
  const stop = (reason = 'stop') => (stopping ??= stopDaemon(running, runner, config, logger, reason));
  return {
    url: http.url,
    warehouse: parts.warehouse,
    watchdog: parts.watchdog,
    stop,
    abortNow: () => runner.abortNow(),
  };
}

/** What the daemon opens before it serves or schedules anything; closed by {@link closeAll}. */
type DaemonParts = JobRunnerParts & { warehouse: MigratedWarehouse };

async function openParts(options: DaemonOptions): Promise<DaemonParts> {
  const { config, logger } = options;
  const publishedDir = options.publishedDir ?? publishedDirFor(config.warehouse);
  const warehouse = await openMigratedWarehouse(config);
  const dispatcher = createHttpAgent(config);
  const progress = createProgressReporter({ logger, intervalMs: config.progressIntervalMs });
  const alerts = new AlertCenter({ warehouse, config, logger, clock: options.clock });
  const watchdog = new Watchdog({
    alerts,
    jobs: options.jobs,
    timezone: config.timezone,
    publishTargets: [
      snapshotLag(publishedDir, () => warehouse.connect()),
      ...(config.postgresUrl === undefined
        ? []
        : [
            postgresLag(warehouse.path, () => warehouse.connect(), {
              neverPublishedSinceMs: (options.clock ?? Date.now)(),
            }),
          ]),
    ],
    publishLagMs: config.alertPublishLagMs,
    logger,
    clock: options.clock,
  });
  return { warehouse, dispatcher, progress, alerts, watchdog, publishedDir };
}

/** Everything a daemon has open, in the order it is closed. */
interface Running {
  parts: DaemonParts;
  tasks: ScheduledTask[];
  http: HttpServer | undefined;
  queue: JobQueue | undefined;
}

/**
 * The one teardown: schedules, the watchdog, the queue, the HTTP server, alert deliveries (given
 * `alertDrainMs`; those cut stay pending for the next start), the upstream agent, the warehouse.
 */
async function closeAll(running: Running, alertDrainMs: number): Promise<void> {
  const { parts, tasks, http, queue } = running;
  for (const task of tasks) await task.destroy();
  parts.watchdog.stop();
  queue?.close();
  await http?.close().catch(() => undefined);
  await parts.alerts.close(alertDrainMs);
  await parts.dispatcher.close();
  parts.warehouse.close();
}

/**
 * The graceful stop (see {@link Daemon.stop}): new work refused at once, the running job given
 * `shutdownGraceMs` (then aborted, unless it merges: a merge is never cut), requests still streaming cut at
 * the same deadline, then {@link closeAll}.
 */
async function stopDaemon(
  running: Running & { http: HttpServer; queue: JobQueue },
  runner: JobRunner,
  config: Config,
  logger: Logger,
  reason: string,
): Promise<void> {
  const { http, queue } = running;
  logger.info({ reason, running: queue.running?.job.name ?? null }, 'daemon stopping');
  for (const task of running.tasks) await task.destroy();
  running.parts.watchdog.stop();
  queue.close();
  const httpClosed = http.close().catch((err: unknown) => {
    logger.warn({ err: errorMessage(err) }, 'http server close failed');
  });
  const deadline = Date.now() + config.shutdownGraceMs;
  const idle = queue.idle();
  if (!(await settlesWithin(idle, config.shutdownGraceMs))) {
    const job = queue.running?.job.name;
    const runId = runner.committing;
    const effect = runner.abortNow();
    logger.warn(
      { job, runId, graceMs: config.shutdownGraceMs },
      effect === 'committing'
        ? 'grace period over while the running job merges: a merge is never cut; waiting for its commit'
        : 'grace period over: aborting the running job (its run is not merged and is recorded as aborted)',
    );
    await idle;
  }
  // Requests still streaming when the grace period is over (a slow client) are cut, not waited for.
  if (!(await settlesWithin(httpClosed, deadline - Date.now()))) http.closeAllConnections();
  await httpClosed;
  await closeAll({ ...running, tasks: [], http: undefined }, config.alertDrainMs);
  logger.info('daemon stopped');
}

/** One node-cron task per enabled job (`noOverlap`, in `timezone`), created stopped; disabled jobs logged. */
function scheduleJobs(
  jobs: readonly Job[],
  queue: JobQueue,
  timezone: string,
  logger: Logger,
): ScheduledTask[] {
  const cronLogger = logger.child({ component: 'cron' });
  const tasks: ScheduledTask[] = [];
  for (const job of jobs) {
    if (!job.enabled) {
      logger.warn({ job: job.name, reason: job.disabledReason }, 'job disabled');
      continue;
    }
    const task = cron.createTask(job.schedule, () => queue.enqueue(job, 'schedule'), {
      name: job.name,
      timezone,
      noOverlap: true,
      logger: {
        info: (m) => cronLogger.debug(m),
        warn: (m) => cronLogger.warn({ job: job.name }, m),
        error: (m, e) => cronLogger.error({ job: job.name, err: e ? errorMessage(e) : undefined }, String(m)),
        debug: (m) => cronLogger.debug(String(m)),
      },
    });
    task.on('execution:overlap', () =>
      logger.info({ job: job.name }, 'job still running or queued at its next time: this firing is skipped'),
    );
    tasks.push(task);
  }
  return tasks;
}

/** Queues, before the schedules start, every job whose last success is older than its period. */
async function catchUp(
  warehouse: Warehouse,
  jobs: readonly Job[],
  queue: JobQueue,
  timezone: string,
  logger: Logger,
): Promise<void> {
  let history: Map<string, JobRunHistory>;
  const connection = await warehouse.connect();
  try {
    history = await lastRunsByJob(connection);
  } finally {
    connection.closeSync();
  }
  for (const due of jobsDueAtStart(jobs, history, timezone)) {
    logger.info(
      { job: due.job.name, lastSuccessAt: due.lastSuccessAt?.toISOString() ?? null, periodMs: due.periodMs },
      'catch-up: last success older than the schedule period, running once now',
    );
    void queue.enqueue(due.job, 'catch-up');
  }
}

function logStarted(
  logger: Logger,
  url: string,
  parts: DaemonParts,
  jobs: readonly Job[],
  timezone: string,
): void {
  logger.info(
    {
      url,
      warehouse: parts.warehouse.path,
      published: parts.publishedDir,
      timezone,
      jobs: jobs.map((j) => ({
        job: j.name,
        schedule: j.schedule,
        target: j.target,
        next: j.enabled ? nextRuns(j.schedule, timezone, 1)[0]?.toISOString() : 'disabled',
      })),
    },
    'daemon started',
  );
}

/** Whether `promise` settles within `ms` (it keeps running either way). */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      sleep(Math.max(0, ms), false, { signal: timer.signal }),
    ]);
  } finally {
    timer.abort();
  }
}
