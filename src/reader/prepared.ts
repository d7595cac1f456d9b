import type {
  DuckDBConnection,
  DuckDBPreparedStatement,
  DuckDBResultReader,
  DuckDBValue,
} from '@duckdb/node-api';

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
): Promise<DuckDBResultReader> {
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
  return statement.runAndReadAll();
}
