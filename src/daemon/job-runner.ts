import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import type { AlertCenter } from '../alerts/alert-center.js';
import type { createProgressReporter } from '../sync/progress-reporter.js';
import { syncTarget, type SyncTarget } from '../sync/sync-sources.js';
import { errorMessage, SyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import { PostgresPublisher } from '../warehouse/postgres/postgres-publisher.js';
import { publishSnapshot } from '../warehouse/publish.js';
import { changedAny } from '../warehouse/run-counters.js';
import { JobQueue, type RunReason } from './job-queue.js';
import type { Job } from './load-jobs.js';
import { PublishPolicy } from './publish-policy.js';
import type { Watchdog } from './watchdog.js';

/** What a job run needs of the daemon: the warehouse and what reports on a run. */
export interface JobRunnerParts {
  warehouse: Warehouse;
  dispatcher: Dispatcher;
  progress: ReturnType<typeof createProgressReporter>;
  alerts: AlertCenter;
  watchdog: Watchdog;
  /** Where snapshots are published. */
  publishedDir: string;
}

/**
 * Runs the daemon's jobs one at a time through its {@link queue}: a job syncs its target; after a
 * successful one the snapshot is published (at most every `REPORTS_PUBLISH_MIN_INTERVAL_MS`, only when
 * something changed) and PostgreSQL, when configured, gets the change set (a failure is retried after the
 * next job); then alerts and the freshness check see the runs' outcomes.
 */
export class JobRunner {
  /** The queue every job goes through (the warehouse has one writer). */
  readonly queue: JobQueue;
  /** The running job's run once it is past its last stop point (merging, committing): no signal cuts it. */
  committing: string | undefined;
  readonly #parts: JobRunnerParts;
  readonly #config: Config;
  readonly #logger: Logger;
  readonly #policy: PublishPolicy;
  readonly #postgres: PostgresPublisher;

  constructor(parts: JobRunnerParts, config: Config, logger: Logger) {
    this.#parts = parts;
    this.#config = config;
    this.#logger = logger;
    this.#policy = new PublishPolicy(config.publishMinIntervalMs, publishedAt(parts.publishedDir));
    this.#postgres = new PostgresPublisher(parts.warehouse, config, logger);
    this.queue = new JobQueue((job, reason, signal) => this.#run(job, reason, signal));
  }

  /**
   * Aborts the running job now: `aborted` (its run is not merged, recorded `aborted`), `committing` (past
   * its last stop point: the merge commits, it is never cut) or `idle` (no job runs).
   */
  abortNow(): 'aborted' | 'committing' | 'idle' {
    if (this.queue.running === undefined) return 'idle';
    this.queue.abortRunning();
    return this.committing === undefined ? 'aborted' : 'committing';
  }

  async #run(job: Job, reason: RunReason, signal: AbortSignal): Promise<void> {
    const { warehouse, progress, alerts, watchdog, dispatcher } = this.#parts;
    const log = this.#logger.child({ job: job.name });
    log.info({ reason, target: job.target }, 'job started');
    const started = Date.now();
    let runIds: string[] = [];
    try {
      const summaries = await syncTarget({
        warehouse,
        // The reader shares this DuckDB instance: a sync must not lower its memory limit while reading.
        config: { ...this.#config, duckdbReadMemoryLimit: this.#config.duckdbMemoryLimit },
        dispatcher,
        logger: this.#logger, // runSync binds runId, job and source itself
        target: job.target as SyncTarget,
        job: job.name,
        signal,
        onProgress: (p) => progress.update(p),
        onStep: () => (this.committing = undefined),
        onCommit: (runId) => (this.committing = runId),
      });
      runIds = summaries.map((s) => s.runId);
      const ok = summaries.length > 0 && summaries.every((s) => s.status === 'succeeded');
      const runs = summaries.map((s) => `${s.runId}: ${s.status}`);
      log.info(
        { reason, durationMs: Date.now() - started, runs },
        ok ? 'job succeeded' : 'job did not succeed',
      );
      // A stats snapshot is new data too; a report run counts when it changed a report.
      const changed = summaries.some((s) => s.source === 'stats' || changedAny(s.counters));
      if (ok && !signal.aborted) await this.#publish(log, changed);
      if (ok && !signal.aborted) await this.#postgres.afterRuns(changed);
    } catch (err) {
      log.error({ err: err instanceof SyncError ? err.toJSON() : errorMessage(err) }, 'job failed');
      // syncTarget records every failure it can; one it throws is in no run log row (a full disk).
      await alerts.unrecordedFailure(job.name, err);
    } finally {
      this.committing = undefined;
      progress.done();
      // Once the runs' outcomes are committed: alerts, then freshness at once (a success restores it).
      await alerts.afterRuns(runIds, [job.name]);
      await watchdog.check();
    }
  }

  /** Publishes the snapshot when the policy says so; a failure is logged, the previous snapshot stays. */
  async #publish(log: Logger, changed: boolean): Promise<void> {
    const decision = this.#policy.afterJob(changed);
    if (decision !== 'publish') {
      const why =
        decision === 'unchanged'
          ? 'nothing changed: snapshot not republished'
          : 'snapshot publish deferred (REPORTS_PUBLISH_MIN_INTERVAL_MS)';
      log.info({ decision }, why);
      return;
    }
    try {
      const { warehouse, publishedDir } = this.#parts;
      const published = await publishSnapshot(warehouse, publishedDir, {
        threads: this.#config.duckdbMergeThreads,
      });
      this.#policy.published();
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
