import { escapeIdentifier } from 'pg';
import { ALL_ROWS, copyTable, upsertRefused, type PublishEnds } from './copy-table.js';
import { PUBLISHED_TABLES } from './pg-tables.js';

/** Rows copied and refused per table by a publish. */
export type TableCounts = Record<string, { rows: number; refused: number }>;

/**
 * A full publish inside the caller's transaction: empties every serving table and `publish_refused`, then
 * streams every table of the warehouse with COPY. DELETE rather than TRUNCATE: readers keep reading the
 * previous state until the commit (MVCC) instead of waiting for TRUNCATE's exclusive lock, and never see
 * a half-copied one.
 */
export async function applyFull(ends: PublishEnds): Promise<TableCounts> {
  const names = PUBLISHED_TABLES.map((t) => escapeIdentifier(t.name));
  for (const name of [...names, 'publish_refused']) await ends.pg.query(`DELETE FROM ${name}`);
  const counts: TableCounts = {};
  for (const table of PUBLISHED_TABLES) {
    counts[table.name] = await copyTable(ends, table, ALL_ROWS, escapeIdentifier(table.name));
  }
  await upsertRefused(ends.pg);
  return counts;
}
