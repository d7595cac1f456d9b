import type { DuckDBConnection, DuckDBPreparedStatement, DuckDBValue } from '@duckdb/node-api';

const statements = new WeakMap<DuckDBConnection, Map<string, Promise<DuckDBPreparedStatement>>>();

/**
 * Runs `sql` with `params` as a statement prepared once per connection and reused: the reader's page
 * queries are a handful of texts run thousands of times a second, and parsing and planning each again
 * cost about as much main-thread time as reading the page (measured on the list at 4M reports). The
 * statements live as long as their pooled connection (a discarded connection takes them along).
 * A connection runs one query at a time, so a statement is never bound twice at once.
 *
 * @throws what DuckDB throws (a statement that failed to prepare is not kept)
 */
export async function runPrepared(
  connection: DuckDBConnection,
  sql: string,
  params: Record<string, DuckDBValue>,
): Promise<DuckDBValue[][]> {
  let byText = statements.get(connection);
  if (byText === undefined) {
    byText = new Map();
    statements.set(connection, byText);
  }
  let prepared = byText.get(sql);
  if (prepared === undefined) {
    const texts = byText;
    prepared = connection.prepare(sql);
    texts.set(sql, prepared);
    prepared.catch(() => texts.delete(sql));
  }
  const statement = await prepared;
  statement.bind(params);
  // The result is materialised by the query itself: its chunks are read here, synchronously, rather than
  // each through a fetch on node's thread pool (two more hand-overs between threads for every page).
  const result = await statement.run();
  const rows: DuckDBValue[][] = [];
  for (let i = 0, n = result.chunkCount; i < n; i++) {
    for (const row of result.getChunk(i).getRows()) rows.push(row);
  }
  return rows;
}
