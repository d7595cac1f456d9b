import type { DuckDBConnection, DuckDBTypeId } from '@duckdb/node-api';
import { duckdbApi } from '../warehouse/duckdb-api.js';
import { SyncError } from '../util/errors.js';
import { intervalText, jsonRows, rowObject } from './json-rows.js';

const { DuckDBTypeId: TypeId } = duckdbApi;

/** The result of one statement of a `sql` query. */
export interface StatementResult {
  /** Rows as JSON-able objects (BIGINT and wider as strings, as DuckDB's JSON conversion gives them). */
  rows: Record<string, unknown>[];
  /** Columns of a numeric SQL type, to align right. */
  numeric: Set<string>;
  /** Column names in order (also when there is no row). */
  columns: string[];
}

const NUMERIC = new Set<DuckDBTypeId>([
  TypeId.TINYINT,
  TypeId.SMALLINT,
  TypeId.INTEGER,
  TypeId.BIGINT,
  TypeId.HUGEINT,
  TypeId.UTINYINT,
  TypeId.USMALLINT,
  TypeId.UINTEGER,
  TypeId.UBIGINT,
  TypeId.UHUGEINT,
  TypeId.FLOAT,
  TypeId.DOUBLE,
  TypeId.DECIMAL,
]);

/**
 * Runs every statement of `query` in order (DuckDB splits it, so `;` inside strings is safe) and returns
 * each one's result. A failing statement throws its DuckDB error; earlier results are dropped with it, and
 * a result with two columns of one name is refused (`SQL_ERROR`: rows are objects keyed by name).
 * With `json`, rows are {@link jsonRows} (JSON columns as JSON values, timestamps ISO 8601).
 */
export async function runStatements(
  connection: DuckDBConnection,
  query: string,
  options: { json?: boolean } = {},
): Promise<StatementResult[]> {
  // DuckDB refuses an empty query with a bare "Error in native callback": say what is wrong instead.
  if (query.replace(/[\s;]+/g, '') === '') {
    // A usage error (exit 2), as any other argument the command cannot take.
    throw new SyncError(
      'CLI_INVALID_OPTION',
      'The query holds no statement: pass SQL such as "select count(*) from reports"',
    );
  }
  const statements = await connection.extractStatements(query);
  const results: StatementResult[] = [];
  for (let i = 0; i < statements.count; i++) {
    const reader = await (await statements.prepare(i)).runAndReadAll();
    const names = reader.columnNames();
    // A row is an object keyed by column name: two columns of one name would leave one of them out.
    const repeated = names.find((name, c) => names.indexOf(name) !== c);
    if (repeated !== undefined) {
      throw new SyncError(
        'SQL_ERROR',
        `Statement ${i + 1} gives two columns the name ${JSON.stringify(repeated)}: name them apart with AS`,
      );
    }
    const types = reader.columnTypes();
    const numeric = new Set(names.filter((_, c) => NUMERIC.has(types[c]!.typeId)));
    results.push({
      rows: options.json
        ? jsonRows(reader)
        : reader
            .getRowsJson()
            .map((row) =>
              rowObject(names, row, (v, c) => (types[c]!.typeId === TypeId.INTERVAL ? intervalText(v) : v)),
            ),
      numeric,
      columns: names,
    });
  }
  return results;
}
