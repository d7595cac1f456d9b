import type { ClientBase } from 'pg';
import { escapeIdentifier } from 'pg';
import { ALL_ROWS, copyTable, upsertRefused, type PublishEnds } from './copy-table.js';
import { PUBLISHED_TABLES } from './pg-tables.js';

/** Rows copied and refused per table by a publish. */
export type TableCounts = Record<string, { rows: number; refused: number }>;

/**
 * A full publish inside the caller's transaction: empties every serving table and `publish_refused`, then
 * streams every table of the warehouse with COPY. DELETE rather than TRUNCATE: readers keep reading the
 * previous state until the commit (MVCC) instead of waiting for TRUNCATE's exclusive lock, and never see
 * a half-copied one. The tables are analysed in the same transaction (planner statistics for the reader).
 */
export async function applyFull(ends: PublishEnds): Promise<TableCounts> {
  const rebuild: string[] = [];
  for (const table of PUBLISHED_TABLES) rebuild.push(...(await dropIndexesWhenEmpty(ends.pg, table.name)));
  const names = PUBLISHED_TABLES.map((t) => escapeIdentifier(t.name));
  for (const name of [...names, 'publish_refused']) await ends.pg.query(`DELETE FROM ${name}`);
  const counts: TableCounts = {};
  for (const table of PUBLISHED_TABLES) {
    counts[table.name] = await copyTable(ends, table, ALL_ROWS, escapeIdentifier(table.name));
  }
  if (rebuild.length > 0) await ends.pg.query(`SET LOCAL maintenance_work_mem = '256MB'`);
  for (const definition of rebuild) await ends.pg.query(definition);
  // Statistics for the planner now, not at autovacuum's next pass: the reader's plans depend on them.
  for (const name of names) await ends.pg.query(`ANALYZE ${name}`);
  await upsertRefused(ends.pg);
  return counts;
}

/**
 * When `table` holds no row (the first publish), drops its secondary indexes and returns their
 * definitions, to create them again after the COPY: building an index once is cheaper than updating it
 * row by row. No reader waits on the lock DROP INDEX takes, since there is nothing to read yet. A table
 * with rows (a rebuild) keeps its indexes, so its readers keep reading the previous state meanwhile.
 */
async function dropIndexesWhenEmpty(pg: ClientBase, table: string): Promise<string[]> {
  const quoted = escapeIdentifier(table);
  const had = await pg.query<{ had: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${quoted}) AS had`);
  if (had.rows[0]?.had !== false) return [];
  const indexes = await pg.query<{ name: string; definition: string }>(
    `SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS definition
     FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
     WHERE x.indrelid = $1::regclass AND NOT x.indisprimary`,
    [quoted],
  );
  for (const index of indexes.rows) await pg.query(`DROP INDEX ${escapeIdentifier(index.name)}`);
  return indexes.rows.map((r) => r.definition);
}
