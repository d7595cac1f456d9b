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

/** DuckDB SQL: true when the value of `column` cannot be stored by PostgreSQL as it is. */
function cannotStore(column: PgColumn): string | undefined {
  const c = duck(duckSource(column));
  if (column.type === 'text') return `contains(${c}, chr(0))`;
  if (column.type === 'json' || column.type === 'jsonb') {
    // The cheap test first: most JSON texts hold no escape at all.
    return `(contains(${c}::VARCHAR, '\\u') AND regexp_matches(${c}::VARCHAR, '${JSON_PG_CANNOT_STORE}'))`;
  }
  return undefined;
}

/** DuckDB SQL: true for a row PostgreSQL cannot store (see {@link refusalReasonSql}). */
export function refusedSql(table: PgTable): string {
  // One test per DuckDB column, though it feeds two PostgreSQL columns (`extra` as jsonb and as json).
  const checks = new Set(table.columns.map(cannotStore).filter((s): s is string => s !== undefined));
  return `coalesce(${[...checks].join(' OR ')}, false)`;
}

/**
 * DuckDB SQL: the reason a refused row is kept out of PostgreSQL, naming its DuckDB columns (each once,
 * where the exact text can be queried).
 */
export function refusalReasonSql(table: PgTable): string {
  const checks = new Map<string, string>();
  for (const col of table.columns) {
    const check = cannotStore(col);
    if (check !== undefined) checks.set(duckSource(col), check);
  }
  const named = [...checks].map(([name, check]) => `CASE WHEN coalesce(${check}, false) THEN '${name}' END`);
  return `'U+0000 (NUL) or a lone surrogate escape in ' || concat_ws(', ', ${named.join(', ')}) ||
    ': PostgreSQL cannot store it; the row is kept in DuckDB unchanged'`;
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
