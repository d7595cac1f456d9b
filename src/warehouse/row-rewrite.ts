import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Up to this many rows are fetched by row id as a filter on the scan (DuckDB's `dynamic_or_filter_threshold`
 * raised for the statement): 300 rows of 4M in ~0.1 s instead of a ~0.6 s scan of every column, 30,000 in
 * 0.43 s instead of 0.66 s; 100,000 were slower that way (2.1 against 1.0 s), so larger sets are joined.
 */
const FETCH_BY_ROW_ID_MAX = 20_000;

/**
 * Copies into the TEMP table `merge_old` the stored rows a run may write: those of `ids` (a subquery of
 * ids) and, with `unseen`, every row marked `unseen_since` (a full export may unmark them, merge-seen.ts).
 * Their row ids are found first (a scan of one or two narrow columns; without `unseen`, DuckDB skips the
 * row groups whose ids are outside those of `ids`), then the rows fetched by row id, so a run that writes a
 * few rows does not read every column of the warehouse. Later steps of the merge build the new rows from
 * it ({@link replaceRows}) and close versions from it (versions.ts).
 */
export async function copyOldRows(c: DuckDBConnection, ids: string, unseen: boolean): Promise<number> {
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_old_rowids AS
     SELECT rowid AS rid FROM report_rows WHERE ${unseen ? 'unseen_since IS NOT NULL OR ' : ''}id IN (${ids})`,
  );
  const n = Number(
    (await c.runAndReadAll('SELECT count(*) AS n FROM merge_old_rowids')).getRowObjectsJS()[0]?.n ?? 0,
  );
  const byRowId = n > 0 && n <= FETCH_BY_ROW_ID_MAX;
  if (byRowId) await c.run(`SET dynamic_or_filter_threshold = ${n + 1}`);
  try {
    await c.run(
      `CREATE OR REPLACE TEMP TABLE merge_old AS
       SELECT * FROM report_rows WHERE ${n === 0 ? 'false' : 'rowid IN (SELECT rid FROM merge_old_rowids)'}`,
    );
  } finally {
    if (byRowId) await c.run('RESET dynamic_or_filter_threshold');
    await c.run('DROP TABLE merge_old_rowids');
  }
  return n;
}

/**
 * Replaces rows of `report_rows` by those `select` gives (full rows, matched by column name; each id at
 * most once): deletes the stored rows of their ids, then appends them. A run writes the rows it changes this
 * way, never with `UPDATE`: DuckDB keeps an `UPDATE`'s undo data for every vector of 2,048 rows it touches,
 * whole, and its commit rewrote every updated column of every touched row group. Updating 300 scattered rows
 * of 4M took a 6.8 s commit, 100,000 took 1.8 s, a 3.5 s commit and 182 MiB of memory (plus 257 MiB
 * spilled); deleting and inserting them took 0.2 s and a 5 ms commit, and 0.7 s, a 0.6 s commit and 1 MiB
 * (measured). The cost: a changed report moves to the end of the table (nothing reads it in stored order).
 *
 * @returns how many rows were replaced
 */
export async function replaceRows(
  c: DuckDBConnection,
  select: string,
  params: Record<string, string> = {},
): Promise<number> {
  // DuckDB refuses a named parameter the statement does not use: pass only those `select` names.
  const used = Object.fromEntries(
    Object.entries(params).filter(([k]) => new RegExp(`\\$${k}\\b`).test(select)),
  );
  await c.run(`CREATE OR REPLACE TEMP TABLE merge_new AS ${select}`, used);
  const n = Number(
    (await c.runAndReadAll('SELECT count(*) AS n FROM merge_new')).getRowObjectsJS()[0]?.n ?? 0,
  );
  if (n > 0) {
    await c.run('DELETE FROM report_rows WHERE id IN (SELECT id FROM merge_new)');
    await c.run('INSERT INTO report_rows BY NAME SELECT * FROM merge_new');
  }
  await c.run('DROP TABLE merge_new');
  return n;
}
