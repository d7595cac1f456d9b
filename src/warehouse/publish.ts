import { mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { SyncError, errorMessage } from '../util/errors.js';
import type { Warehouse } from './database.js';
import { publishedPathFor } from './open-migrated.js';
import { removeLeftovers, removeOldVersions, removeQuietly, swapSymlink } from './publish-files.js';
import { reportVersionsSql } from './versions.js';

/**
 * Working tables of no use to analysts (empty between runs, or the reader's serving index, derived from
 * `reports`): not written as Parquet.
 */
const WORKING_TABLES = new Set([
  'staging_reports',
  'sync_checkpoints',
  'schema_migrations',
  'reader_serving',
  'reader_page_counts',
  'reader_extra_keys',
]);

/** Run-scoped staging (`staging_*`): left out of the published copy and the Parquet set. */
const isStaging = (table: string) => table.startsWith('staging_');

/**
 * Columns the sync keeps for itself (change detection hashes): left out of the published copy and the
 * Parquet set, so analysts see business columns and bookkeeping only.
 */
const INTERNAL_COLUMNS: Record<string, string[]> = {
  reports: ['content_hash', 'line_hash', 'csv_line_hash'],
  report_rows: ['content_hash', 'line_hash', 'csv_line_hash'],
  report_versions_closed: ['content_hash'],
  report_versions: ['content_hash'],
};

/**
 * Tables whose rows analysts read through a view (migration 011): the view is written as Parquet in their
 * place, so `report_versions.parquet` holds every version, the current ones included.
 */
const PARQUET_AS_VIEW: Record<string, string> = {
  report_versions_closed: 'report_versions',
  // The stored rows of reports (migration 020): the view lifts last_seen_at and run_id.
  report_rows: 'reports',
};

/** Tables written as Hive-partitioned Parquet, with their partition column. */
const PARTITIONED: Record<string, string> = { reports: 'destination' };

/** The published folder of a warehouse (`data/warehouse.duckdb` → `data/published`). */
export function publishedDirFor(warehousePath: string): string {
  return dirname(publishedPathFor(warehousePath));
}

/** What {@link publishSnapshot} wrote. Durations are milliseconds. */
export interface PublishResult {
  /** The read-only copy: `<published>/warehouse.duckdb`. */
  databasePath: string;
  /** `<published>/parquet`: a symlink to the current `parquet-<stamp>` folder. */
  parquetPath: string;
  /**
   * Tables of the copy with their row counts. Parquet holds the same minus working tables, with
   * `report_versions_closed` written as the `report_versions` view (every version).
   */
  tables: { name: string; rows: number }[];
  databaseMs: number;
  parquetMs: number;
  publishedAt: Date;
}

/**
 * Publishes a read-only snapshot of the warehouse for analysts and dashboards (DESIGN.md §7), so that
 * `duckdb -readonly`, BI tools and Spark/Trino read it while the daemon holds the live file:
 *
 * 1. `<published>/warehouse.duckdb`: `ATTACH` a temp file in the same folder, `COPY FROM DATABASE` the
 *    live one into it, `DETACH` (which checkpoints and closes it), then `rename` over the old copy. A
 *    reader never sees a half-written file; one that has the old copy open keeps reading it (POSIX rename).
 * 2. `<published>/parquet/<table>.parquet`, with `reports` Hive-partitioned by `destination`
 *    (`parquet/reports/destination=ROAD_CONTROL/data_0.parquet`): written to a temp folder, renamed to
 *    `parquet-<stamp>`, and the `parquet` symlink swapped to it with one `rename`. The previous version is
 *    kept until the next publish (readers mid-scan), older ones are removed.
 *
 * The copy and the Parquet set hold what analysts query: no staging tables (`staging_*`) and no internal
 * columns (`content_hash`, `line_hash`); the copy keeps the views `current_reports`, `report_history` and
 * `report_versions` (written as `report_versions.parquet`, every version, the current ones included).
 *
 * Call it between runs: the caller's job queue makes sure no run writes meanwhile, so the copy is one
 * consistent state. Left-over temp files of a publish that died are removed first.
 *
 * Measured (bench/measure-publish.ts, 2 shared cores): the sample in 0.2–0.6 s, 1M reports in 19–40 s.
 * A `CHECKPOINT` plus a plain copy of the file took 1–6 s for 1M, but copying a file DuckDB holds open is
 * only sound while nothing can checkpoint into it, and it carries free blocks (408 vs 280 MiB): DuckDB's
 * own `COPY FROM DATABASE` is the safe choice.
 *
 * @param dir the published folder (default {@link publishedDirFor} the warehouse)
 * @throws SyncError `PUBLISH_FAILED` naming the folder and the cause (the previous snapshot stays as it was)
 */
export async function publishSnapshot(
  warehouse: Warehouse,
  dir = publishedDirFor(warehouse.path),
): Promise<PublishResult> {
  const stamp = new Date().toISOString().replace(/[-:.]/g, '');
  const tmpDb = join(dir, `.warehouse.duckdb.tmp-${process.pid}-${stamp}`);
  const tmpParquet = join(dir, `.parquet.tmp-${process.pid}-${stamp}`);
  const connection = await warehouse.connect();
  try {
    mkdirSync(dir, { recursive: true });
    removeLeftovers(dir);

    const started = Date.now();
    const live = String(
      (await connection.runAndReadAll('SELECT current_database() AS db')).getRowObjectsJS()[0]?.db,
    );
    const alias = `publish_${process.pid}`;
    await connection.run(`ATTACH ${literal(tmpDb)} AS ${ident(alias)}`);
    let tables: { name: string; rows: number }[];
    try {
      await connection.run(`COPY FROM DATABASE ${ident(live)} TO ${ident(alias)}`);
      await stripInternals(connection, alias);
      tables = await tableCounts(connection, alias);
    } finally {
      await connection.run(`DETACH ${ident(alias)}`);
    }
    const databasePath = join(dir, 'warehouse.duckdb');
    renameSync(tmpDb, databasePath);
    const databaseMs = Date.now() - started;

    const parquetStarted = Date.now();
    mkdirSync(tmpParquet);
    for (const { name: table } of tables) {
      if (WORKING_TABLES.has(table)) continue;
      const name = PARQUET_AS_VIEW[table] ?? table;
      const partition = PARTITIONED[name];
      const target = partition ? join(tmpParquet, name) : join(tmpParquet, `${name}.parquet`);
      const options = partition ? `FORMAT parquet, PARTITION_BY (${ident(partition)})` : 'FORMAT parquet';
      const internal = await presentColumns(connection, live, name, INTERNAL_COLUMNS[name] ?? []);
      const columns = internal.length === 0 ? '*' : `* EXCLUDE (${internal.map(ident).join(', ')})`;
      await connection.run(`COPY (SELECT ${columns} FROM ${ident(name)}) TO ${literal(target)} (${options})`);
    }
    const version = `parquet-${stamp}`;
    renameSync(tmpParquet, join(dir, version));
    const parquetPath = join(dir, 'parquet');
    swapSymlink(parquetPath, version);
    removeOldVersions(dir, version);
    return {
      databasePath,
      parquetPath,
      tables,
      databaseMs,
      parquetMs: Date.now() - parquetStarted,
      publishedAt: new Date(),
    };
  } catch (err) {
    for (const path of [tmpDb, `${tmpDb}.wal`, tmpParquet]) removeQuietly(path);
    throw new SyncError(
      'PUBLISH_FAILED',
      `Publishing the snapshot to ${dir} failed: ${errorMessage(err)}. The previous snapshot is unchanged; ` +
        'check free disk space and that the folder is writable.',
      { context: { dir }, cause: err },
    );
  } finally {
    connection.closeSync();
  }
}

/** Drops the staging tables and the internal columns from the copy `database` (see INTERNAL_COLUMNS). */
async function stripInternals(connection: DuckDBConnection, database: string): Promise<void> {
  for (const name of await tableNames(connection, database)) {
    if (isStaging(name)) {
      await connection.run(`DROP TABLE ${ident(database)}.main.${ident(name)}`);
      continue;
    }
    for (const column of await presentColumns(connection, database, name, INTERNAL_COLUMNS[name] ?? [])) {
      await connection.run(`ALTER TABLE ${ident(database)}.main.${ident(name)} DROP COLUMN ${ident(column)}`);
    }
  }
  // The view read the columns just dropped: defined again over what the copy holds.
  if ((await tableNames(connection, database)).includes('report_versions_closed')) {
    await connection.run(
      `CREATE OR REPLACE VIEW ${ident(database)}.main.report_versions AS ${reportVersionsSql({ hashes: false })}`,
    );
  }
}

/** Which of `wanted` the table has (a warehouse not yet migrated to the newest schema may lack some). */
async function presentColumns(
  connection: DuckDBConnection,
  database: string,
  table: string,
  wanted: string[],
): Promise<string[]> {
  if (wanted.length === 0) return [];
  const rows = await connection.runAndReadAll(
    `SELECT column_name FROM duckdb_columns() WHERE database_name = $db AND schema_name = 'main' AND table_name = $t`,
    { db: database, t: table },
  );
  const present = new Set(rows.getRowObjectsJS().map((r) => String(r.column_name)));
  return wanted.filter((c) => present.has(c));
}

async function tableNames(connection: DuckDBConnection, database: string): Promise<string[]> {
  return (
    await connection.runAndReadAll(
      `SELECT table_name FROM duckdb_tables() WHERE database_name = $db AND schema_name = 'main' ORDER BY table_name`,
      { db: database },
    )
  )
    .getRowObjectsJS()
    .map((r) => String(r.table_name));
}

async function tableCounts(
  connection: DuckDBConnection,
  database: string,
): Promise<{ name: string; rows: number }[]> {
  const names = await tableNames(connection, database);
  const tables: { name: string; rows: number }[] = [];
  for (const name of names) {
    const rows = (
      await connection.runAndReadAll(`SELECT count(*) AS n FROM ${ident(database)}.main.${ident(name)}`)
    ).getRowObjectsJS()[0]?.n;
    tables.push({ name, rows: Number(rows) });
  }
  return tables;
}

function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
