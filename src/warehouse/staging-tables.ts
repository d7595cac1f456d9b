import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Where a run stages its records: valid rows (`staging_reports` columns) and known lines (`staging_seen`
 * columns). Table names are fixed identifiers, never user input.
 */
export interface StagingTables {
  readonly rows: string;
  readonly seen: string;
  /** Temp tables of the run's connection: nothing survives the process, nothing goes through the WAL. */
  readonly temporary: boolean;
}

/** The warehouse's staging tables: committed batch by batch, so a paged export can resume (DESIGN.md §6). */
export const DURABLE_STAGING: StagingTables = {
  rows: 'staging_reports',
  seen: 'staging_seen',
  temporary: false,
};

/**
 * Staging for a streamed export, which can never resume (a broken body restarts from its start,
 * DESIGN.md §4): temp tables of the run's connection with the same columns. Issue #7: committing 1M
 * staged rows batch by batch to the file wrote each row to the WAL and again at every checkpoint, only to
 * delete it at the merge; temp tables cost neither and spill to DuckDB's temp directory past
 * `memory_limit`.
 */
export const STREAM_STAGING: StagingTables = {
  rows: 'staging_stream',
  seen: 'staging_stream_seen',
  temporary: true,
};

/** Creates the temp tables of {@link STREAM_STAGING} on this connection when missing (no-op for durable). */
export async function ensureStagingTables(
  connection: DuckDBConnection,
  tables: StagingTables,
): Promise<void> {
  if (!tables.temporary) return;
  await connection.run(
    `CREATE TEMP TABLE IF NOT EXISTS ${tables.rows} AS SELECT * FROM ${DURABLE_STAGING.rows} LIMIT 0`,
  );
  await connection.run(
    `CREATE TEMP TABLE IF NOT EXISTS ${tables.seen} AS SELECT * FROM ${DURABLE_STAGING.seen} LIMIT 0`,
  );
}

/** Drops the temp tables of {@link STREAM_STAGING} (frees their memory and spill files). Idempotent. */
export async function dropStagingTables(connection: DuckDBConnection, tables: StagingTables): Promise<void> {
  if (!tables.temporary) return;
  await connection.run(`DROP TABLE IF EXISTS ${tables.rows}`);
  await connection.run(`DROP TABLE IF EXISTS ${tables.seen}`);
}
