import type { DuckDBConnection } from '@duckdb/node-api';

// What the published copy and the Parquet set hold (docs/deployment.md, "Published snapshot"): the
// warehouse's tables without run-scoped staging and without the sync's change-detection hashes.

/**
 * Columns the sync keeps for itself (change detection hashes): left out of the published copy and the
 * Parquet set, so analysts see business columns and bookkeeping only.
 */
export const INTERNAL_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  report_rows: ['content_hash', 'line_hash', 'csv_hash', 'csv_line_hash'],
  report_versions_closed: ['content_hash'],
};

/** Run-scoped staging (`staging_*`): left out of the published copy and the Parquet set. */
export const isStaging = (table: string): boolean => table.startsWith('staging_');

/**
 * Working tables kept in the copy but not written as Parquet: a resumable run's checkpoints and the schema's
 * version, the data-quality flags, the alerts and their deliveries (the operators' view of the warehouse,
 * docs/deployment.md "Alerts"), and the reader's serving index (derived from the reports, rebuilt from them
 * on open).
 */
export const COPY_ONLY_TABLES: ReadonlySet<string> = new Set([
  'sync_checkpoints',
  'schema_migrations',
  'data_quality_flags',
  'alert_events',
  'alert_deliveries',
  'reader_serving',
  'reader_page_counts',
  'reader_extra_keys',
]);

/**
 * Tables left out of the published copy and the Parquet set, like staging: the reader's recent rows
 * (warehouse/serving-recent.ts) repeat current reports, up to an eighth of them, that a publish would copy
 * again whole each time; a reader of the copy, not finding them, reads every report from `report_rows`. The
 * sorted runs and the sort under way (warehouse/sorted-runs.ts) describe the live `report_rows`' order.
 */
export const LIVE_ONLY_TABLES: ReadonlySet<string> = new Set([
  'reader_page_recent',
  'reader_sorted_runs',
  'reader_sort_pending',
]);

/** Tables the published copy does not hold. */
export const isUnpublished = (table: string): boolean => isStaging(table) || LIVE_ONLY_TABLES.has(table);

/**
 * The bookkeeping table of the published copy: one row naming the warehouse state it holds (the
 * watermark, see change-set.ts). Not a warehouse table: written by the publish only.
 */
export const WATERMARK_TABLE = 'publish_watermark';

/** The name of the connection's own database (the live warehouse), as `ATTACH`ed copies name theirs. */
export async function currentDatabase(connection: DuckDBConnection): Promise<string> {
  const reader = await connection.runAndReadAll('SELECT current_database() AS db');
  return String(reader.getRowObjectsJS()[0]?.db);
}

/** Tables of `database` (schema `main`), by name. */
export async function tableNames(connection: DuckDBConnection, database: string): Promise<string[]> {
  const reader = await connection.runAndReadAll(
    `SELECT table_name FROM duckdb_tables() WHERE database_name = $db AND schema_name = 'main' ORDER BY table_name`,
    { db: database },
  );
  return reader.getRowObjectsJS().map((r) => String(r.table_name));
}

/** Columns of `database.main.table` in table order (empty when there is no such table). */
export async function columnNames(
  connection: DuckDBConnection,
  database: string,
  table: string,
): Promise<string[]> {
  const reader = await connection.runAndReadAll(
    `SELECT column_name FROM duckdb_columns()
     WHERE database_name = $db AND schema_name = 'main' AND table_name = $t ORDER BY column_index`,
    { db: database, t: table },
  );
  return reader.getRowObjectsJS().map((r) => String(r.column_name));
}

/** The published columns of a live table: its columns minus {@link INTERNAL_COLUMNS}. */
export async function publishedColumns(
  connection: DuckDBConnection,
  database: string,
  table: string,
): Promise<string[]> {
  const internal = INTERNAL_COLUMNS[table] ?? [];
  return (await columnNames(connection, database, table)).filter((c) => !internal.includes(c));
}

/** `table` of `database` as a qualified SQL name. */
export function qualified(database: string, table: string): string {
  return `${ident(database)}.main.${ident(table)}`;
}

/** A SQL string literal. */
export function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** A quoted SQL identifier. */
export function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A column list for SQL (`"a", "b"`), each column qualified by `alias` when given. */
export function columnList(columns: readonly string[], alias?: string): string {
  return columns.map((c) => (alias ? `${alias}.${ident(c)}` : ident(c))).join(', ');
}
