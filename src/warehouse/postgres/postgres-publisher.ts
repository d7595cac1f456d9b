import { SyncError, errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import type { Warehouse } from '../database.js';
import { publishToPostgres, type PostgresPublishResult } from './publish-postgres.js';

/** Where the runs of a process publish to (`REPORTS_POSTGRES_URL`, `REPORTS_POSTGRES_SCHEMA`). */
export interface PostgresTarget {
  postgresUrl?: string | undefined;
  postgresSchema: string;
}

/**
 * Publishes to PostgreSQL after runs, for the one-shot `sync` and the daemon (docs/deployment.md, "Serving
 * from PostgreSQL"). DuckDB is the system of record: a PostgreSQL that is down or refuses never fails a
 * run. The failure is logged (password redacted) and the publish is tried again after the next run,
 * changed or not, which then catches up on every run since the last publish that committed.
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
      const result = await publishToPostgres(this.warehouse, { url, schema: this.target.postgresSchema });
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
      this.logger.error(
        { err: err instanceof SyncError ? err.toJSON() : this.lastError, schema: this.target.postgresSchema },
        'not published to PostgreSQL: the warehouse is unchanged and the next run publishes again',
      );
      return undefined;
    }
  }
}
