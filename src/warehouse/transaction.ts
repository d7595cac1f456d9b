import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Runs `fn` in one transaction on `connection`: `BEGIN TRANSACTION`, then `COMMIT` when `fn` resolves, or
 * `ROLLBACK` when it throws (a failed rollback is ignored: DuckDB already aborted the transaction, and the
 * first error is the one worth reporting). Returns what `fn` returns.
 *
 * @throws whatever `fn` or the `COMMIT` throws (after the rollback)
 */
export async function withTransaction<T>(
  connection: DuckDBConnection,
  fn: (connection: DuckDBConnection) => Promise<T>,
): Promise<T> {
  await connection.run('BEGIN TRANSACTION');
  try {
    const result = await fn(connection);
    await connection.run('COMMIT');
    return result;
  } catch (err) {
    await connection.run('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * Runs `fn` in a transaction that is always rolled back: a probe whose writes must never stay (e.g. does
 * DuckDB accept this batch file?). Returns what `fn` returns.
 */
export async function withRollback<T>(
  connection: DuckDBConnection,
  fn: (connection: DuckDBConnection) => Promise<T>,
): Promise<T> {
  await connection.run('BEGIN TRANSACTION');
  try {
    return await fn(connection);
  } finally {
    await connection.run('ROLLBACK').catch(() => undefined);
  }
}

/**
 * Deletes what run `runId` staged: its `staging_reports` and `staging_seen` rows and its
 * `sync_checkpoints`, and with `rejects` its quarantine entries too (when its export is read again from the
 * start). Call inside the caller's transaction (or wrap it in {@link withTransaction}).
 */
export async function dropRunStaging(
  connection: DuckDBConnection,
  runId: string,
  options: { rejects?: boolean } = {},
): Promise<void> {
  const run = { run: runId };
  await connection.run('DELETE FROM staging_reports WHERE run_id = $run', run);
  await connection.run('DELETE FROM staging_seen WHERE run_id = $run', run);
  if (options.rejects === true) await connection.run('DELETE FROM rejected_records WHERE run_id = $run', run);
  await connection.run('DELETE FROM sync_checkpoints WHERE run_id = $run', run);
}
