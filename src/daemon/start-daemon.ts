import { setTimeout as sleep } from 'node:timers/promises';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import cron, { type ScheduledTask } from 'node-cron';
import type { Config } from '../config/config.js';
import { createProgressReporter } from '../sync/progress-reporter.js';
import { syncTarget, type SyncTarget } from '../sync/sync-sources.js';
import { createHttpAgent } from '../upstream/http-agent.js';
import { errorMessage, SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import { openMigratedWarehouse } from '../warehouse/open-migrated.js';
import { PostgresPublisher } from '../warehouse/postgres/postgres-publisher.js';
import { postgresLag } from '../alerts/postgres-lag.js';
import { publishSnapshot, publishedDirFor } from '../warehouse/publish.js';
import { changedAny } from '../warehouse/run-counters.js';
import { AlertCenter } from '../alerts/alert-center.js';
import { snapshotLag } from '../alerts/snapshot-lag.js';
import { Watchdog } from './watchdog.js';
import { PublishPolicy } from './publish-policy.js';
import { nextRuns } from './cron-times.js';
import { startHttpServer, type HttpServer } from './http-server.js';
import { JobQueue, type RunReason } from './job-queue.js';
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
  /** Where snapshots are published (default: `published/` next to the warehouse). */
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
      ...(config.postgresUrl === undefined ? [] : [postgresLag(warehouse.path, () => warehouse.connect())]),
    ],
    publishLagMs: config.alertPublishLagMs,
    logger,
    clock: options.clock,
  });

  // PostgreSQL, when configured, gets each job's change set; a failure is retried after the next job.
  const postgres = new PostgresPublisher(warehouse, config, logger);
  const policy = new PublishPolicy(config.publishMinIntervalMs, publishedAt(publishedDir));
  const publish = async (log: Logger, changed: boolean): Promise<void> => {
    const decision = policy.afterJob(changed);
    if (decision !== 'publish') {
      log.info(
        { decision },
        decision === 'unchanged'
          ? 'nothing changed: snapshot not republished'
          : 'snapshot publish deferred (REPORTS_PUBLISH_MIN_INTERVAL_MS)',
      );
      return;
    }
    try {
      const published = await publishSnapshot(warehouse, publishedDir, {
        threads: config.duckdbMergeThreads,
      });
      policy.published();
      log.info(
        {
          path: published.databasePath,
          parquet: published.parquetPath,
          // incremental: the previous snapshot brought forward by the change set; full: why not
          mode: published.mode,
          reason: published.reason,
          changes: published.changes,
          parquetFiles: published.parquet,
          databaseMs: published.databaseMs,
          parquetMs: published.parquetMs,
        },
        'snapshot published',
      );
    } catch (err) {
      // The sync itself succeeded; the previous snapshot stays in place until the next success.
      log.error(
        { err: err instanceof SyncError ? err.toJSON() : errorMessage(err) },
        'snapshot not published',
      );
    }
  };
  // The reader shares this DuckDB instance: a sync must not lower its memory limit while reading.
  const syncConfig = { ...config, duckdbReadMemoryLimit: config.duckdbMemoryLimit };
  // The running job's run once it is past its last stop point (merging, committing): a signal no longer
  // aborts it. Reset when the job's next run starts and when the job ends.
  let committing: string | undefined;
  const runJob = async (job: Job, reason: RunReason, signal: AbortSignal): Promise<void> => {
    const log = logger.child({ job: job.name });
    log.info({ reason, target: job.target }, 'job started');
    const started = Date.now();
    let runIds: string[] = [];
    try {
      const summaries = await syncTarget({
        warehouse,
        config: syncConfig,
        dispatcher,
        logger, // runSync binds runId, job and source itself
        target: job.target as SyncTarget,
        job: job.name,
        signal,
        onProgress: (p) => progress.update(p),
        onStep: () => (committing = undefined),
        onCommit: (runId) => (committing = runId),
      });
      runIds = summaries.map((s) => s.runId);
      const ok = summaries.length > 0 && summaries.every((s) => s.status === 'succeeded');
      log.info(
        { reason, durationMs: Date.now() - started, runs: summaries.map((s) => `${s.runId}: ${s.status}`) },
        ok ? 'job succeeded' : 'job did not succeed',
      );
      // A stats snapshot is new data too; a report run counts when it changed a report.
      const changed = summaries.some((s) => s.source === 'stats' || changedAny(s.counters));
      if (ok && !signal.aborted) await publish(log, changed);
      if (ok && !signal.aborted) await postgres.afterRuns(changed);
    } catch (err) {
      log.error({ err: err instanceof SyncError ? err.toJSON() : errorMessage(err) }, 'job failed');
    } finally {
      committing = undefined;
      progress.done();
      // Once the runs' outcomes are committed: alerts, then freshness at once (a success restores it).
      await alerts.afterRuns(runIds, [job.name]);
      await watchdog.check();
    }
  };
  const abortRunning = (): 'aborted' | 'committing' | 'idle' => {
    if (queue.running === undefined) return 'idle';
    queue.abortRunning();
    return committing === undefined ? 'aborted' : 'committing';
  };
  const queue = new JobQueue(runJob);

  let http: HttpServer;
  try {
    http = await startHttpServer({
      warehouse,
      config,
      logger,
      host: config.host,
      port: config.port,
      info: {
        jobs: options.jobs,
        timezone: config.timezone,
        running: () => queue.running,
        pending: () => queue.pending,
        freshnessObjectives: () => watchdog.objectives,
        publishLags: () => watchdog.lags,
      },
    });
  } catch (err) {
    await alerts.close(0);
    await dispatcher.close();
    warehouse.close();
    throw err;
  }

  const cronLogger = logger.child({ component: 'cron' });
  const tasks: ScheduledTask[] = [];
  for (const job of options.jobs) {
    if (!job.enabled) {
      logger.warn({ job: job.name, reason: job.disabledReason }, 'job disabled');
      continue;
    }
    const task = cron.createTask(job.schedule, () => queue.enqueue(job, 'schedule'), {
      name: job.name,
      timezone: config.timezone,
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

  // Catch-up before the schedules start, so a due job runs first.
  let history: Map<string, JobRunHistory>;
  try {
    const connection = await warehouse.connect();
    try {
      history = await lastRunsByJob(connection);
    } finally {
      connection.closeSync();
    }
  } catch (err) {
    for (const task of tasks) await task.destroy();
    await http.close();
    await alerts.close(0);
    await dispatcher.close();
    warehouse.close();
    throw err;
  }
  for (const due of jobsDueAtStart(options.jobs, history, config.timezone)) {
    logger.info(
      {
        job: due.job.name,
        lastSuccessAt: due.lastSuccessAt?.toISOString() ?? null,
        periodMs: due.periodMs,
      },
      'catch-up: last success older than the schedule period, running once now',
    );
    void queue.enqueue(due.job, 'catch-up');
  }
  for (const task of tasks) await task.start();
  // Deliveries a stopped process left pending, then the first check; later ones on their own timer.
  await alerts.resumePending();
  void watchdog.check();
  watchdog.start(config.alertCheckIntervalMs);
  logger.info(
    {
      url: http.url,
      warehouse: warehouse.path,
      published: publishedDir,
      timezone: config.timezone,
      jobs: options.jobs.map((j) => ({
        job: j.name,
        schedule: j.schedule,
        target: j.target,
        next: j.enabled ? nextRuns(j.schedule, config.timezone, 1)[0]?.toISOString() : 'disabled',
      })),
    },
    'daemon started',
  );

  let stopping: Promise<void> | undefined;
  const stop = (reason = 'stop') =>
    (stopping ??= (async () => {
      logger.info({ reason, running: queue.running?.job.name ?? null }, 'daemon stopping');
      for (const task of tasks) await task.destroy();
      watchdog.stop();
      queue.close();
      const httpClosed = http.close().catch((err: unknown) => {
        logger.warn({ err: errorMessage(err) }, 'http server close failed');
      });
      const deadline = Date.now() + config.shutdownGraceMs;
      const idle = queue.idle();
      if (!(await settlesWithin(idle, config.shutdownGraceMs))) {
        const job = queue.running?.job.name;
        const runId = committing;
        const effect = abortRunning();
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
      // Deliveries under way get REPORTS_ALERT_DRAIN_MS; those cut stay pending for the next start.
      await alerts.close(config.alertDrainMs);
      await dispatcher.close();
      warehouse.close();
      logger.info('daemon stopped');
    })());

  return {
    url: http.url,
    warehouse,
    watchdog,
    stop,
    abortNow: abortRunning,
  };
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

/** When the published copy in `dir` was written (its file's mtime), or undefined when there is none. */
function publishedAt(dir: string): Date | undefined {
  try {
    return statSync(join(dir, 'warehouse.duckdb')).mtime;
  } catch {
    return undefined;
  }
}
