import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DuckDBBlobValue, DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import type { ClientBase } from 'pg';
import { escapeIdentifier } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { duckSource, type PgColumn, type PgTable } from './pg-tables.js';

/** A DuckDB identifier, quoted (names come from pg-tables.ts, never from data). */
const duck = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * A JSON text PostgreSQL refuses: the escape `\u0000`, or a surrogate escape (JSON.stringify writes real
 * characters for pairs, so one that is escaped stands alone), not itself preceded by an escaping backslash.
 */
const JSON_PG_CANNOT_STORE = String.raw`(^|[^\\])(\\\\)*\\u(0000|[dD][89a-fA-F])`;

/** A JSON number token; in JSON text whose strings are blanked, every run of digits belongs to one. */
const JSON_NUMBER = String.raw`-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?`;
const JSON_NUMBER_PARTS = String.raw`^-?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$`;
const JSON_STRING = String.raw`"(?:[^"\\]|\\.)*"`;

/**
 * DuckDB SQL: true when the JSON text `x` holds a number PostgreSQL's `numeric`, and so `jsonb`, cannot
 * hold (its input fails with "value overflows numeric format"), as the number is written: its leading
 * digit 131,072 or more places before the decimal point, more than 16,383 digits after it (fraction
 * digits minus the exponent: `1.5e-16383`, `0.0e-99999`), or an exponent of ±1,073,741,823 or more (PostgreSQL
 * docs, "Numeric Types", for PostgreSQL 14 and later; `json` keeps any of them as text). Only a text with
 * an exponent of five digits or a run of 1,000 digits can hold one, so the exact test, over the number
 * tokens left once strings are blanked, runs on those alone. test/postgres/jsonb-numbers.test.ts checks
 * it against a server.
 */
export function jsonbCannotHoldSql(x: string): string {
  return `(regexp_matches(${x}, '[eE][+-]?[0-9]{5}|[0-9]{1000}') AND list_bool_or(list_transform(
    list_transform(
      list_transform(regexp_extract_all(regexp_replace(${x}, '${JSON_STRING}', '""', 'g'), '${JSON_NUMBER}'),
        lambda t: regexp_extract(t, '${JSON_NUMBER_PARTS}', ['i', 'f', 'e'])),
      lambda p: {'i': ltrim(p.i, '0'), 'f': p.f, 'z': length(p.f) - length(ltrim(p.f, '0')),
                 'e': TRY_CAST(CASE WHEN p.e = '' THEN '0' ELSE p.e END AS HUGEINT)}),
    lambda q: q.e IS NULL OR abs(q.e) >= 1073741823 OR length(q.f) - q.e > 16383
      OR coalesce(CASE WHEN q.i <> '' THEN length(q.i) - 1 + q.e
                       WHEN q.z < length(q.f) THEN q.e - q.z - 1 END >= 131072, false))))`;
}

/** DuckDB SQL: true when the value of `column` cannot be stored by PostgreSQL as it is. */
function cannotStore(column: PgColumn): string | undefined {
  const c = duck(duckSource(column));
  if (column.type === 'text') return `contains(${c}, chr(0))`;
  if (column.type === 'json' || column.type === 'jsonb') {
    // The cheap test first: most JSON texts hold no escape at all.
    const escape = `(contains(${c}::VARCHAR, '\\u') AND regexp_matches(${c}::VARCHAR, '${JSON_PG_CANNOT_STORE}'))`;
    return column.type === 'json' ? escape : `(${escape} OR ${jsonbCannotHoldSql(`${c}::VARCHAR`)})`;
  }
  return undefined;
}

/** The tests of a table's DuckDB columns, each column once (`extra` feeds a `jsonb` and a `json` column). */
function checksByDuckColumn(table: PgTable): Map<string, string> {
  const checks = new Map<string, string[]>();
  for (const col of table.columns) {
    const check = cannotStore(col);
    if (check === undefined) continue;
    const name = duckSource(col);
    const list = checks.get(name) ?? [];
    if (!list.includes(check)) list.push(check);
    checks.set(name, list);
  }
  return new Map([...checks].map(([name, list]) => [name, list.join(' OR ')]));
}

/** DuckDB SQL: true for a row PostgreSQL cannot store (see {@link refusalReasonSql}). */
export function refusedSql(table: PgTable): string {
  return `coalesce(${[...checksByDuckColumn(table).values()].join(' OR ')}, false)`;
}

/**
 * DuckDB SQL: the reason a refused row is kept out of PostgreSQL, naming its DuckDB columns (each once,
 * where the exact value can be queried).
 */
export function refusalReasonSql(table: PgTable): string {
  const named = [...checksByDuckColumn(table)].map(
    ([name, check]) => `CASE WHEN coalesce(${check}, false) THEN '${name}' END`,
  );
  return `'U+0000 (NUL), a lone surrogate escape or a number jsonb cannot hold in ' ||
    concat_ws(', ', ${named.join(', ')}) || ': PostgreSQL cannot store it; the row is kept in DuckDB unchanged'`;
}

/** DuckDB SQL: the row's key columns as a JSON array (the `publish_refused.row_key`). */
export function rowKeySql(table: PgTable): string {
  return `to_json([${table.key.map((k) => `${duck(k)}::VARCHAR`).join(', ')}])::VARCHAR`;
}

/** DuckDB SQL: one value as a field of PostgreSQL's CSV COPY format (unquoted empty = NULL). */
function csvField(column: PgColumn): string {
  const c = duck(duckSource(column));
  switch (column.type) {
    case 'text':
      return `CASE WHEN ${c} IS NULL THEN '' ELSE '"' || replace(${c}, '"', '""') || '"' END`;
    case 'json':
    case 'jsonb':
      return `CASE WHEN ${c} IS NULL THEN '' ELSE '"' || replace(${c}::VARCHAR, '"', '""') || '"' END`;
    case 'timestamptz':
      // Microseconds as UTC text, whatever the session's time zone.
      return `coalesce(strftime(make_timestamp(epoch_us(${c})), '%Y-%m-%d %H:%M:%S.%f') || '+00', '')`;
    case 'boolean':
      return `CASE WHEN ${c} IS NULL THEN '' WHEN ${c} THEN 't' ELSE 'f' END`;
    default:
      // DOUBLE as the shortest text that reads back to the same value (inf and nan included).
      return `coalesce(${c}::VARCHAR, '')`;
  }
}

/**
 * DuckDB SQL: one CSV line of `columns`, newline included, as a BLOB of its UTF-8 bytes: bytes reach
 * the COPY stream as they are, without a JavaScript string per row (half the time of the DuckDB side of a
 * full publish, measured at 1M reports).
 */
export function csvLineSql(columns: readonly PgColumn[]): string {
  return `encode(concat(${columns.map(csvField).join(`, ',', `)}, chr(10)))`;
}

/** PostgreSQL: `COPY <target> (<columns>) FROM STDIN` in CSV format. */
export function copyIntoSql(target: string, columns: readonly PgColumn[]): string {
  const list = columns.map((c) => escapeIdentifier(c.name)).join(', ');
  return `COPY ${target} (${list}) FROM STDIN WITH (FORMAT csv)`;
}

/**
 * Streams the one-column result of `linesSql` (CSV lines as bytes, see {@link csvLineSql}) from DuckDB into
 * PostgreSQL's `copySql`, a DuckDB chunk (~2,048 rows) at a time with backpressure: memory stays bounded
 * by a chunk, whatever the table's size. Returns the rows copied.
 *
 * @throws the DuckDB or PostgreSQL error that stopped the copy (the caller's transaction rolls back)
 */
export async function streamCopy(
  source: DuckDBConnection,
  linesSql: string,
  params: Record<string, DuckDBValue>,
  target: ClientBase,
  copySql: string,
): Promise<number> {
  const result = await source.stream(linesSql, params);
  let rows = 0;
  async function* chunks(): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = await result.fetchChunk();
      if (chunk === null || chunk.rowCount === 0) return;
      const lines = chunk.getColumnValues(0) as DuckDBBlobValue[];
      rows += lines.length;
      yield Buffer.concat(lines.map((line) => line.bytes));
    }
  }
  await pipeline(Readable.from(chunks()), target.query(copyFrom(copySql)));
  return rows;
}
