import pRetry from 'p-retry';
import { SyncError, errorMessage, isSyncError } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import type { Warehouse } from '../database.js';
import { notePublish } from './publish-record.js';
import { publishToPostgres, type PostgresPublishResult } from './publish-postgres.js';

/**
 * Attempts of one publish after runs: a server restarting or a lost connection is tried again with
 * jittered exponential backoff (p-retry) before the publish waits for the next run.
 */
const RETRY = { retries: 2, minTimeout: 1000, maxTimeout: 8000, factor: 3, randomize: true } as const;

/** Where the runs of a process publish to (`REPORTS_POSTGRES_URL`, `REPORTS_POSTGRES_SCHEMA`). */
export interface PostgresTarget {
  postgresUrl?: string | undefined;
  postgresSchema: string;
}

/**
 * Publishes to PostgreSQL after runs, for the one-shot `sync` and the daemon (docs/deployment.md, "Serving
 * from PostgreSQL"). DuckDB is the system of record: a PostgreSQL that is down or refuses never fails a
 * run. A retryable failure (server down, lost connection) is tried again with backoff ({@link RETRY}), then
 * logged (password redacted) and tried again after the next run, changed or not, which then catches up
 * on every run since the last publish that committed. Every attempt's outcome is noted in the publish
 * record beside the warehouse (publish-record.ts), which `status` and `/metrics` show as the lag.
 * Not thread-safe by design: called between runs, one at a time.
 */
export class PostgresPublisher {
  /** A publish is owed: nothing published yet by this process, or the last attempt failed. */
  #pending = true;
  /** The last failure's message, until a publish succeeds. */
  lastError: string | undefined;

  constructor(
    private readonly warehouse: Warehouse,
    private readonly target: PostgresTarget,
    private readonly logger: Logger,
  ) {}

  /** Whether a PostgreSQL URL is configured. */
  get enabled(): boolean {
    return this.target.postgresUrl !== undefined;
  }

  /**
   * Publishes when runs `changed` the warehouse or a publish is owed; returns what it did, or `undefined`
   * when it did not publish or failed (never throws).
   */
  async afterRuns(changed: boolean): Promise<PostgresPublishResult | undefined> {
    const url = this.target.postgresUrl;
    if (url === undefined || (!changed && !this.#pending)) return undefined;
    try {
      const result = await pRetry(
        () => publishToPostgres(this.warehouse, { url, schema: this.target.postgresSchema }),
        {
          ...RETRY,
          shouldRetry: ({ error }) => isSyncError(error) && error.retryable,
          onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
            if (retriesLeft > 0) {
              this.logger.warn(
                { attempt: attemptNumber, err: errorMessage(error), schema: this.target.postgresSchema },
                'publish to PostgreSQL failed: trying again',
              );
            }
          },
        },
      );
      notePublish(this.warehouse.path, { ok: true, lastRunId: result.lastRunId });
      this.#pending = false;
      this.lastError = undefined;
      this.logger.info(
        {
          schema: this.target.postgresSchema,
          mode: result.mode,
          fullReason: result.fullReason,
          ms: result.ms,
          tables: result.tables,
        },
        'published to PostgreSQL',
      );
      return result;
    } catch (err) {
      this.#pending = true;
      this.lastError = errorMessage(err);
      notePublish(this.warehouse.path, { ok: false, error: this.lastError });
      this.logger.error(
        { err: err instanceof SyncError ? err.toJSON() : this.lastError, schema: this.target.postgresSchema },
        'not published to PostgreSQL: the warehouse is unchanged and the next run publishes again',
      );
      return undefined;
    }
  }
}
