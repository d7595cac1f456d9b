import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Share of the rows DuckDB stores for `report_rows` that are deleted, from which the merge of a run that
 * reads no full export (`recent`) lets its commit vacuum all the same: a mirror fed only by `recent` runs
 * still reclaims the space of the rows its changes replaced.
 */
export const VACUUM_DELETED_SHARE = 1 / 8;

/** What DuckDB stores for one table: every row still in its row groups, and how many of those are deleted. */
export interface StoredRows {
  /** Rows in the table's row groups, deleted ones included (`duckdb_tables().estimated_size`). */
  stored: number;
  /** Of those, rows deleted and not yet vacuumed: `stored` less `count(*)`. */
  deleted: number;
}

/**
 * The rows DuckDB stores for `table` (a table of the current database's `main` schema) and how many are
 * deleted. A merge replaces a changed report by a delete and an insert (row-rewrite.ts); the deleted row
 * keeps its place until a checkpoint's vacuum merges its row group with neighbours (DuckDB docs,
 * "Reclaiming Space"). `estimated_size` counts stored rows, deleted ones included, and costs nothing;
 * `count(*)` reads the row ids and loads their delete markers: ~20 ms at 10M reports warm, 0.4 s as the first
 * statement on a cold file (markers the merge's scans then find loaded).
 *
 * @throws DuckDB's error when the table cannot be read
 */
export async function storedRows(connection: DuckDBConnection, table = 'report_rows'): Promise<StoredRows> {
  const row = (
    await connection.runAndReadAll(
      `SELECT (SELECT estimated_size FROM duckdb_tables()
               WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $table)::DOUBLE AS stored,
              (SELECT count(*) FROM main."${table.replace(/"/g, '""')}")::DOUBLE AS live`,
      { table },
    )
  ).getRowObjectsJS()[0]!;
  const stored = Number(row.stored ?? 0);
  return { stored, deleted: Math.max(0, stored - Number(row.live)) };
}

/**
 * Whether the merge of a run may vacuum at its commit: always for a run that reads a full export, whose
 * cost already follows the warehouse's size; for any other run only once at least
 * {@link VACUUM_DELETED_SHARE} of the rows stored for `report_rows` are deleted.
 *
 * Why: DuckDB's checkpoint vacuums whatever qualifies at that moment, up to three row groups merged into
 * fewer per task (its `RowGroupCollection::ScheduleVacuumTasks`). Runs append changed reports at the end
 * of the table and delete their old rows, so its last row groups come to fit in fewer at some commit,
 * whichever run's it is: on a 10M-report warehouse after its nightly run, a `recent` run of 29,000 new
 * reports paid for merging the 363,010 rows of the last four row groups into three, 3.5 s of checkpoint
 * and 670 MiB peak RSS, against 0.2 s and 445 MiB with the vacuum left to the next full run (measured).
 *
 * @throws DuckDB's error when `report_rows` cannot be read
 */
export async function mergeMayVacuum(connection: DuckDBConnection, fullExport: boolean): Promise<boolean> {
  if (fullExport) return true;
  const { stored, deleted } = await storedRows(connection);
  return stored > 0 && deleted >= stored * VACUUM_DELETED_SHARE;
}

/**
 * Runs `fn` with DuckDB's checkpoint vacuum off (`max_vacuum_tasks` 0) unless `allowed`, then restores the
 * setting it found, also when `fn` throws. The setting belongs to the whole instance: a reader sharing it
 * has no vacuum meanwhile, which costs it nothing (its connections never write).
 *
 * @throws whatever `fn` throws, or DuckDB's error when the setting cannot be read
 */
export async function withVacuum<T>(
  connection: DuckDBConnection,
  allowed: boolean,
  fn: () => Promise<T>,
): Promise<T> {
  if (allowed) return fn();
  const before = Number(
    (await connection.runAndReadAll(`SELECT current_setting('max_vacuum_tasks')::BIGINT`)).getRows()[0]![0],
  );
  if (before === 0) return fn();
  await connection.run('SET max_vacuum_tasks = 0');
  try {
    return await fn();
  } finally {
    // Never in place of `fn`'s error (an instance a failed write invalidated refuses every statement).
    await connection.run(`SET max_vacuum_tasks = ${before}`).catch(() => undefined);
  }
}
