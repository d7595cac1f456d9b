import type { DuckDBConnection } from '@duckdb/node-api';
import { CHANGED_REPORTS, CHANGE_RUNS, changedRowsSql, tablePolicy, type ChangeSet } from './change-set.js';
import {
  INTERNAL_COLUMNS,
  WATERMARK_TABLE,
  columnList,
  columnNames,
  ident,
  isUnpublished,
  qualified,
  tableNames,
} from './published-tables.js';
import { reportVersionsSql } from './versions.js';

// The published DuckDB copy (publish.ts): written whole, or the previous copy brought forward by a change set.

/**
 * Writes the whole copy into the empty database attached as `copy`: the schema of `live` (`COPY FROM
 * DATABASE … (SCHEMA)`: tables, keys, views) without staging tables and internal columns, then each
 * table's published columns. Copying whole tables and dropping the hashes after took longer and left their
 * blocks in the file as free space (1M reports: 144 against 113 MB, measured).
 */
export async function writeFullCopy(connection: DuckDBConnection, live: string, copy: string): Promise<void> {
  await connection.run(`COPY FROM DATABASE ${ident(live)} TO ${ident(copy)} (SCHEMA)`);
  for (const table of await tableNames(connection, copy)) {
    if (isUnpublished(table)) {
      await connection.run(`DROP TABLE ${qualified(copy, table)}`);
      continue;
    }
    const present = await columnNames(connection, copy, table);
    for (const column of (INTERNAL_COLUMNS[table] ?? []).filter((c) => present.includes(c))) {
      await connection.run(`ALTER TABLE ${qualified(copy, table)} DROP COLUMN ${ident(column)}`);
    }
    const columns = columnList(await columnNames(connection, copy, table));
    await connection.run(
      `INSERT INTO ${qualified(copy, table)} (${columns}) SELECT ${columns} FROM ${qualified(live, table)}`,
    );
  }
  // The view read the columns just dropped: defined again over what the copy holds.
  if ((await tableNames(connection, copy)).includes('report_versions_closed')) {
    await connection.run(
      `CREATE OR REPLACE VIEW ${qualified(copy, 'report_versions')} AS ${reportVersionsSql({ hashes: false })}`,
    );
  }
  await redefineViews(connection, live, copy);
}

/**
 * Defines every other view of the copy again, in creation order, from its own SQL: a view keeps the column
 * list it was bound with, so `reports` (`SELECT r.* …` over `report_rows`) still listed the dropped hash
 * columns in `information_schema.columns` and `duckdb_columns()`, which BI tools build their column lists
 * from, though querying them failed. Run with the copy as the default database, where its SQL binds.
 */
async function redefineViews(connection: DuckDBConnection, live: string, copy: string): Promise<void> {
  const views = (
    await connection.runAndReadAll(
      `SELECT view_name, sql FROM duckdb_views()
       WHERE database_name = $db AND schema_name = 'main' AND NOT internal AND view_name <> 'report_versions'
       ORDER BY view_oid`,
      { db: copy },
    )
  ).getRowObjectsJS();
  if (views.length === 0) return;
  await connection.run(`USE ${ident(copy)}`);
  try {
    for (const view of views) {
      // A view of the operator's own that reads a column or table the copy leaves out cannot bind: it is
      // left as COPY FROM DATABASE made it (failing when queried, as before), not the publish.
      await connection
        .run(String(view.sql).replace(/^CREATE VIEW /i, 'CREATE OR REPLACE VIEW '))
        .catch(() => undefined);
    }
  } finally {
    await connection.run(`USE ${ident(live)}`);
  }
}

/**
 * Applies `changes` (built on this connection, live warehouse in schema `main`) to the previous copy
 * attached as `copy`, table by table (change-set.ts says what each table's change is). The copy is not
 * published yet, so each statement commits on its own: memory stays that of one statement.
 */
export async function applyChangeSet(
  connection: DuckDBConnection,
  copy: string,
  changes: ChangeSet,
): Promise<void> {
  for (const table of await copiedTables(connection, copy)) {
    const columns = await columnNames(connection, copy, table);
    const target = qualified(copy, table);
    const rows = changedRowsSql(table, columns, changes);
    switch (tablePolicy(table)) {
      case 'reports':
        if (changes.changedReports === 0) break;
        await connection.run(`DELETE FROM ${target} WHERE id IN (SELECT id FROM ${CHANGED_REPORTS})`);
        await connection.run(`INSERT INTO ${target} (${columnList(columns)}) ${rows}`);
        break;
      case 'appended':
        if (changes.appendedVersions > 0)
          await connection.run(`INSERT INTO ${target} (${columnList(columns)}) ${rows}`);
        break;
      case 'by-run':
        await connection.run(`DELETE FROM ${target} WHERE run_id IN (SELECT run_id FROM ${CHANGE_RUNS})`);
        await connection.run(`INSERT INTO ${target} (${columnList(columns)}) ${rows}`);
        break;
      case 'whole': {
        const key = MERGED_BY_KEY[table];
        if (key) {
          await connection.run(mergeByKeySql(target, rows, columns, key));
          break;
        }
        await connection.run(`DELETE FROM ${target}`);
        await connection.run(`INSERT INTO ${target} (${columnList(columns)}) ${rows}`);
        break;
      }
    }
  }
}

/**
 * Tables of the change set's `whole` policy too large to replace every time, with their key: the
 * reader's page counts (one row per status, destination and time bucket: 291,000 rows at 4M reports, of
 * which a `recent` run changes a few hundred). Unique by construction: serving-index.ts keeps them with a
 * `MERGE` on the same key. Replacing them whole took ~0.2 s of a 4-second publish at 4M reports (measured).
 */
const MERGED_BY_KEY: Readonly<Record<string, readonly string[]>> = {
  reader_page_counts: ['status', 'destination', 'bucket'],
};

/**
 * A `MERGE` (DuckDB ≥ 1.4, `WHEN NOT MATCHED BY SOURCE`) that makes `target` hold the rows of `source`
 * (SQL selecting `columns`), writing only the rows that differ, matched on `key`.
 */
function mergeByKeySql(
  target: string,
  source: string,
  columns: readonly string[],
  key: readonly string[],
): string {
  const on = key.map((c) => `t.${ident(c)} IS NOT DISTINCT FROM s.${ident(c)}`).join(' AND ');
  const values = columns.filter((c) => !key.includes(c));
  const differs = values.map((c) => `t.${ident(c)} IS DISTINCT FROM s.${ident(c)}`).join(' OR ');
  const update = values.map((c) => `${ident(c)} = s.${ident(c)}`).join(', ');
  return `MERGE INTO ${target} t USING (${source}) s ON ${on}
    ${values.length > 0 ? `WHEN MATCHED AND (${differs}) THEN UPDATE SET ${update}` : ''}
    WHEN NOT MATCHED BY TARGET THEN INSERT (${columnList(columns)}) VALUES (${columns.map((c) => `s.${ident(c)}`).join(', ')})
    WHEN NOT MATCHED BY SOURCE THEN DELETE`;
}

/** The copy's tables that come from the warehouse (all but its watermark table). */
async function copiedTables(connection: DuckDBConnection, copy: string): Promise<string[]> {
  return (await tableNames(connection, copy)).filter((t) => t !== WATERMARK_TABLE);
}

/**
 * How the copy attached as `copy` differs from the live warehouse (schema `main`) in row counts: per table,
 * and per run for the run-scoped tables. Undefined when they agree: the cheap check that a change set
 * missed nothing it could count (a miss sends the publish back to a full one).
 */
export async function copyDifference(
  connection: DuckDBConnection,
  copy: string,
): Promise<string | undefined> {
  for (const table of await copiedTables(connection, copy)) {
    const one = qualified(copy, table);
    const byRun = tablePolicy(table) === 'by-run';
    const counts = byRun
      ? `SELECT run_id, count(*) AS n FROM main.${ident(table)} GROUP BY run_id`
      : `SELECT count(*) AS n FROM main.${ident(table)}`;
    const copied = byRun
      ? `SELECT run_id, count(*) AS n FROM ${one} GROUP BY run_id`
      : `SELECT count(*) AS n FROM ${one}`;
    const reader = await connection.runAndReadAll(
      `SELECT (SELECT count(*) FROM (${counts} EXCEPT ${copied})) + (SELECT count(*) FROM (${copied} EXCEPT ${counts})) AS d`,
    );
    if (Number(reader.getRowObjectsJS()[0]?.d) > 0)
      return `the copy's ${table} rows differ in number from the warehouse's`;
  }
  return undefined;
}

/** Tables of the copy with their row counts. */
export async function copyTableCounts(
  connection: DuckDBConnection,
  copy: string,
): Promise<{ name: string; rows: number }[]> {
  const tables: { name: string; rows: number }[] = [];
  for (const name of await tableNames(connection, copy)) {
    const reader = await connection.runAndReadAll(`SELECT count(*) AS n FROM ${qualified(copy, name)}`);
    tables.push({ name, rows: Number(reader.getRowObjectsJS()[0]?.n) });
  }
  return tables;
}

/**
 * A previous copy with more than this share of its blocks free, and at least {@link MIN_FREE_BYTES} of
 * them, is written whole again (compacted); a small copy's free blocks cost nothing worth a full publish.
 */
const MAX_FREE_SHARE = 1 / 3;
const MIN_FREE_BYTES = 16 * 1024 * 1024;

/**
 * Why the copy attached as `copy` should be written whole rather than brought forward: much of its file is
 * free blocks (rows replaced by many publishes; DuckDB reuses free blocks but never shrinks a file).
 * Undefined when it is compact enough.
 */
export async function copyTooSparse(connection: DuckDBConnection, copy: string): Promise<string | undefined> {
  const reader = await connection.runAndReadAll(
    `SELECT total_blocks, free_blocks, block_size FROM pragma_database_size() WHERE database_name = $db`,
    { db: copy },
  );
  const row = reader.getRowObjectsJS()[0];
  const [total, free] = [Number(row?.total_blocks ?? 0), Number(row?.free_blocks ?? 0)];
  if (free <= MAX_FREE_SHARE * total || free * Number(row?.block_size ?? 0) < MIN_FREE_BYTES)
    return undefined;
  return `${Math.round((100 * free) / total)}% of the previous copy's file is free space: it is written whole again`;
}
