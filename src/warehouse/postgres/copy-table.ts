import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { ClientBase } from 'pg';
import { escapeIdentifier } from 'pg';
import {
  copyIntoSql,
  csvLineSql,
  refusalReasonSql,
  refusedSql,
  rowKeySql,
  streamCopy,
} from './copy-lines.js';
import type { PgColumn, PgTable } from './pg-tables.js';

/** The two ends of a publish: DuckDB inside a read transaction, PostgreSQL inside the publish transaction. */
export interface PublishEnds {
  duck: DuckDBConnection;
  pg: ClientBase;
}

/** A DuckDB filter on a table's rows: SQL over its columns, with its named parameters. */
export interface RowFilter {
  where: string;
  params: Record<string, DuckDBValue>;
}

/** Every row. */
export const ALL_ROWS: RowFilter = { where: 'true', params: {} };

const REFUSED_COLUMNS: PgColumn[] = [
  { name: 'table_name', type: 'text' },
  { name: 'row_key', type: 'text' },
  { name: 'run_id', type: 'text' },
  { name: 'reason', type: 'text' },
];

/** The temp table a publish collects refused rows in before they are upserted into `publish_refused`. */
export const REFUSED_TEMP = 'publish_refused_new';

/** Creates the publish's temp tables for refused rows (dropped at the end of the transaction). */
export async function createRefusedTemp(pg: ClientBase): Promise<void> {
  await pg.query(
    `CREATE TEMP TABLE ${REFUSED_TEMP} (table_name text, row_key text, run_id text, reason text) ON COMMIT DROP`,
  );
}

/**
 * Copies the rows of `table` that match `filter` from DuckDB into the PostgreSQL table `target` (the
 * serving table or a temp table of the same columns), with COPY in constant memory; the rows PostgreSQL
 * cannot store go to {@link REFUSED_TEMP} with their reason instead (docs/deployment.md, "Serving from
 * PostgreSQL", the NUL rule). `source` is the DuckDB table read, `table.name` unless the rows were set
 * apart first. Returns the rows copied and refused.
 */
export async function copyTable(
  ends: PublishEnds,
  table: PgTable,
  filter: RowFilter,
  target: string,
  source: string = table.name,
): Promise<{ rows: number; refused: number }> {
  const from = escapeDuck(source);
  const refused = refusedSql(table);
  const rows = await streamCopy(
    ends.duck,
    `SELECT ${csvLineSql(table.columns)} FROM ${from} WHERE (${filter.where}) AND NOT ${refused}`,
    filter.params,
    ends.pg,
    copyIntoSql(target, table.columns),
  );
  const refusedRows = await streamCopy(
    ends.duck,
    `SELECT ${csvLineSql(REFUSED_COLUMNS)} FROM (
       SELECT '${table.name}' AS table_name, ${rowKeySql(table)} AS row_key, ${escapeDuck(table.runColumn)} AS run_id,
         ${refusalReasonSql(table)} AS reason
       FROM ${from} WHERE (${filter.where}) AND ${refused})`,
    filter.params,
    ends.pg,
    copyIntoSql(REFUSED_TEMP, REFUSED_COLUMNS),
  );
  return { rows, refused: refusedRows };
}

/**
 * Moves the collected refused rows into `publish_refused` (a row refused again gets its new reason). Unique
 * on `md5(row_key)` (migration 004): a key may be longer than a btree entry holds.
 */
export async function upsertRefused(pg: ClientBase): Promise<void> {
  await pg.query(
    `INSERT INTO publish_refused (table_name, row_key, run_id, reason)
     SELECT DISTINCT ON (table_name, row_key) table_name, row_key, run_id, reason FROM ${REFUSED_TEMP}
     ON CONFLICT (table_name, md5(row_key)) DO UPDATE
       SET run_id = EXCLUDED.run_id, reason = EXCLUDED.reason, refused_at = now()`,
  );
}

/** A PostgreSQL temp table with the columns of the serving table `table`, dropped at commit. */
export async function createTempLike(pg: ClientBase, table: PgTable): Promise<string> {
  const temp = escapeIdentifier(`${table.name}_new`);
  await pg.query(`CREATE TEMP TABLE ${temp} (LIKE ${escapeIdentifier(table.name)}) ON COMMIT DROP`);
  return temp;
}

const escapeDuck = (name: string) => `"${name.replace(/"/g, '""')}"`;
