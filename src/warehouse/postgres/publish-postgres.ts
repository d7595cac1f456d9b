import { CHANGED_REPORTS_SQL } from '../runs.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { ClientBase } from 'pg';
import { escapeIdentifier } from 'pg';
import { isSyncError } from '../../util/errors.js';
import { failpoint } from '../../util/failpoint.js';
import type { Warehouse } from '../database.js';
import { applyChanges, type AppliedState } from './apply-changes.js';
import { applyFull, type TableCounts } from './apply-full.js';
import { createRefusedTemp, type PublishEnds } from './copy-table.js';
import { connectPostgres, postgresError } from './pg-client.js';
import { migratePostgres } from './pg-migrate.js';
import { PUBLISHED_TABLES, RUN_SCOPED, SYNC_RUNS } from './pg-tables.js';

/** Options of {@link publishToPostgres}. */
export interface PostgresPublishOptions {
  /** A `postgres://` URL (libpq parameters such as `sslmode` included). */
  url: string;
  /** The serving schema (`REPORTS_POSTGRES_SCHEMA`, default `reports_sync`). */
  schema: string;
  /** Rebuild every table instead of applying the changes since the last publish. */
  full?: boolean;
}

/** What {@link publishToPostgres} did. `ms` is the wall time in milliseconds. */
export interface PostgresPublishResult {
  /** `full`: every table copied; `changes`: the change set since the last publish. */
  mode: 'full' | 'changes';
  /** Why a full publish ran (`first`, `asked`, a reset, `counts differ (…)`), when it did. */
  fullReason?: string;
  /** Rows copied and refused (U+0000 and other text PostgreSQL cannot store) per table. */
  tables: TableCounts;
  /** The latest merge time now applied (ISO 8601, UTC), if the warehouse merged anything. */
  watermark: string | null;
  lastRunId: string | null;
  ms: number;
  /**
   * After a full publish: whether `VACUUM (ANALYZE)` of the copied tables ran (false when the server
   * refused it; the publish stands all the same). Undefined after a change set (autovacuum's work).
   */
  vacuumed?: boolean | undefined;
}

/** The warehouse's state at the publish: what the bookkeeping row records (UTC text, microseconds). */
interface SourceState {
  watermark: string | null;
  runsStartedMax: string | null;
  lastRunId: string | null;
  /** The last run that changed the reports, and when it finished: the reader's validators. */
  servedRunId: string | null;
  servedAt: string | null;
}

const UTC_TEXT = (column: string) =>
  `strftime(make_timestamp(epoch_us(${column})), '%Y-%m-%d %H:%M:%S.%f') || '+00'`;

/**
 * Publishes the warehouse to PostgreSQL in ONE transaction (docs/deployment.md, "Serving from
 * PostgreSQL"): the serving schema is created or migrated, then either every table is copied (first
 * publish, `full`, after a reset, or when a run-log table's row count disagrees after applying the
 * changes: a clock gone back), or only the change set since the last publish; the bookkeeping row `publish_state` is
 * written in the same transaction. A publish cut at any point leaves PostgreSQL at the previous publish;
 * running it again applies the same change set once. DuckDB is read in one transaction (one snapshot).
 * Call between runs (the caller's job queue), like the snapshot publish.
 *
 * @throws SyncError `POSTGRES_PUBLISH_FAILED` (retryable): the server is down or refuses, the connection
 *   was lost, or a statement failed; PostgreSQL is then unchanged
 */
export async function publishToPostgres(
  warehouse: Warehouse,
  options: PostgresPublishOptions,
): Promise<PostgresPublishResult> {
  const started = Date.now();
  const pg = await connectPostgres(options.url, 'reports-sync publish');
  const duck = await warehouse.connect();
  try {
    await migratePostgres(pg, options.schema).catch((err: unknown) => {
      throw postgresError(err, `cannot migrate schema ${options.schema}`);
    });
    await duck.run('BEGIN TRANSACTION');
    const source = await sourceState(duck);
    const result = await inPgTransaction(pg, () =>
      publishOnce(pg, duck, source, options.full === true, warehouse.path),
    );
    const vacuumed = result.mode === 'full' ? await vacuumPublished(pg) : undefined;
    const ms = Date.now() - started;
    return { ...result, vacuumed, watermark: source.watermark, lastRunId: source.lastRunId, ms };
  } catch (err) {
    throw isSyncError(err) ? err : postgresError(err, 'publish to PostgreSQL failed');
  } finally {
    await duck.run('ROLLBACK').catch(() => undefined);
    duck.closeSync();
    await pg.end().catch(() => undefined);
  }
}

async function publishOnce(
  pg: ClientBase,
  duck: DuckDBConnection,
  source: SourceState,
  full: boolean,
  file: string,
): Promise<Pick<PostgresPublishResult, 'mode' | 'fullReason' | 'tables'>> {
  await pg.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`reports-sync:publish`]);
  const applied = await appliedState(pg);
  await createRefusedTemp(pg);
  const ends = { duck, pg };
  let outcome: Pick<PostgresPublishResult, 'mode' | 'fullReason' | 'tables'>;
  const fullReason = full ? 'asked' : applied === undefined ? 'first' : await resetSince(ends, applied);
  if (fullReason !== undefined || applied === undefined) {
    outcome = { mode: 'full', fullReason: fullReason ?? 'first', tables: await applyFull(ends) };
  } else {
    await pg.query('SAVEPOINT changes');
    const tables = await applyChanges(ends, applied);
    const differ = await countsDiffer(ends);
    if (differ === undefined) outcome = { mode: 'changes', tables };
    else {
      await pg.query('ROLLBACK TO SAVEPOINT changes');
      await pg.query('TRUNCATE publish_refused_new');
      outcome = { mode: 'full', fullReason: `counts differ (${differ})`, tables: await applyFull(ends) };
    }
  }
  await failpoint('postgres-applied');
  await writeState(pg, source, outcome.mode, file);
  return outcome;
}

async function sourceState(duck: DuckDBConnection): Promise<SourceState> {
  const reader = await duck.runAndReadAll(
    `SELECT ${UTC_TEXT('max(merged_at)')} AS watermark, ${UTC_TEXT('max(started_at)')} AS runs_started_max,
       arg_max(run_id, started_at) AS last_run_id,
       arg_max(run_id, (finished_at, run_id)) FILTER (WHERE ${CHANGED_REPORTS_SQL}) AS served_run_id,
       ${UTC_TEXT('max(finished_at) FILTER (WHERE ' + CHANGED_REPORTS_SQL + ')')} AS served_at
     FROM sync_runs`,
  );
  const row = reader.getRowObjectsJS()[0] ?? {};
  const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
  return {
    watermark: text(row.watermark),
    runsStartedMax: text(row.runs_started_max),
    lastRunId: text(row.last_run_id),
    servedRunId: text(row.served_run_id),
    servedAt: text(row.served_at),
  };
}

/** The state the last publish recorded, when it can be resumed from (both times known). */
async function appliedState(pg: ClientBase): Promise<AppliedState | undefined> {
  const utc = (c: string) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00'`;
  const res = await pg.query<{ watermark: string | null; runs: string | null }>(
    `SELECT ${utc('watermark')} AS watermark, ${utc('runs_started_max')} AS runs FROM publish_state FOR UPDATE`,
  );
  const row = res.rows[0];
  if (!row?.watermark || !row.runs) return undefined;
  return { watermark: row.watermark, runsStartedMax: row.runs };
}

/**
 * Says so when a `reports-sync reset` ran since the last publish: it deleted reports and versions, which
 * a change set (rows stamped since) cannot carry.
 */
async function resetSince(ends: PublishEnds, applied: AppliedState): Promise<string | undefined> {
  const reader = await ends.duck.runAndReadAll(
    `SELECT count(*)::DOUBLE AS n FROM sync_runs WHERE job = 'reset' AND started_at > $since::TIMESTAMPTZ`,
    { since: applied.runsStartedMax },
  );
  return Number(reader.getRowObjectsJS()[0]?.n) > 0 ? 'a reset since the last publish' : undefined;
}

/**
 * The first run-log table whose rows in PostgreSQL (stored + refused) differ from DuckDB's, if any: a run
 * missed (its start before the last publish's latest one: a clock gone back) shows there. The report
 * tables are not counted (a count of millions of rows on every publish); what deletes their rows is a
 * reset ({@link resetSince}).
 */
async function countsDiffer(ends: PublishEnds): Promise<string | undefined> {
  for (const table of [SYNC_RUNS, ...RUN_SCOPED]) {
    const name = escapeIdentifier(table.name);
    const duckCount = Number(
      (await ends.duck.runAndReadAll(`SELECT count(*)::DOUBLE AS n FROM ${name}`)).getRowObjectsJS()[0]?.n,
    );
    const res = await ends.pg.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM ${name}) + (SELECT count(*) FROM publish_refused WHERE table_name = $1) AS n`,
      [table.name],
    );
    const pgCount = Number(res.rows[0]?.n);
    if (pgCount !== duckCount) return `${table.name}: PostgreSQL ${pgCount}, DuckDB ${duckCount}`;
  }
  return undefined;
}

/**
 * Records what this publish applied. `served_run_id` and `served_at` (the PostgreSQL reader's `ETag` and
 * `Last-Modified`) are the last run that changed the reports, so a `/stats` snapshot or a run that changed
 * nothing keeps every client's cache valid, as on the DuckDB reader. `published_at` moves only with
 * `last_run_id`: a publish that brings no run leaves both as they were.
 */
async function writeState(pg: ClientBase, source: SourceState, mode: string, file: string) {
  await pg.query(
    `INSERT INTO publish_state (singleton, watermark, runs_started_max, last_run_id, mode, published_at, warehouse,
       served_run_id, served_at)
     VALUES (true, $1, $2, $3, $4, now(), $5, $6, $7)
     ON CONFLICT (singleton) DO UPDATE SET watermark = EXCLUDED.watermark,
       runs_started_max = EXCLUDED.runs_started_max, last_run_id = EXCLUDED.last_run_id, mode = EXCLUDED.mode,
       published_at = CASE WHEN publish_state.last_run_id IS NOT DISTINCT FROM EXCLUDED.last_run_id
         THEN publish_state.published_at ELSE EXCLUDED.published_at END,
       warehouse = EXCLUDED.warehouse, served_run_id = EXCLUDED.served_run_id, served_at = EXCLUDED.served_at`,
    [
      source.watermark,
      source.runsStartedMax,
      source.lastRunId,
      mode,
      file,
      source.servedRunId,
      source.servedAt,
    ],
  );
}

/**
 * `VACUUM (ANALYZE)` of every published table after a full publish (outside its transaction, as VACUUM must
 * be): rows copied in bulk are not yet marked all-visible, so the reader's index-only scans would visit the
 * table for each of them until autovacuum passes (measured at 4M reports: page 2,000 of a filter read by
 * OFFSET took 290 ms before, 58 ms after; 4.4 s of VACUUM). A refusal (a role without the right) is no
 * failure of the publish.
 */
async function vacuumPublished(pg: ClientBase): Promise<boolean> {
  try {
    for (const table of PUBLISHED_TABLES) await pg.query(`VACUUM (ANALYZE) ${escapeIdentifier(table.name)}`);
    return true;
  } catch {
    return false;
  }
}

async function inPgTransaction<T>(pg: ClientBase, fn: () => Promise<T>): Promise<T> {
  await pg.query('BEGIN');
  try {
    const result = await fn();
    await pg.query('COMMIT');
    return result;
  } catch (err) {
    await pg.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
