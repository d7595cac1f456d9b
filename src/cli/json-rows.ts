import { randomUUID } from 'node:crypto';
import type { DuckDBResultReader } from '@duckdb/node-api';
import { duckdbApi } from '../warehouse/duckdb-api.js';

/**
 * A `JSON` column's value kept as its text, so that {@link stringifyRows} writes it as stored: parsed, an
 * integer past 2^53 would print rounded (`12345678901234567890123` as `1.2345678901234568e+22`).
 */
export class RawJson {
  constructor(readonly text: string) {}
}

/**
 * `JSON.stringify(value, null, 2)` with every {@link RawJson} written as its own text (valid JSON: DuckDB's
 * `JSON` type checks it on the way in).
 */
export function stringifyRows(value: unknown): string {
  const mark = randomUUID();
  const raws: string[] = [];
  const text = JSON.stringify(
    value,
    (_key, v: unknown) => (v instanceof RawJson ? `${mark}:${raws.push(v.text) - 1}` : v),
    2,
  );
  return text.replace(new RegExp(`"${mark}:(\\d+)"`, 'g'), (_, i: string) => raws[Number(i)] ?? 'null');
}

/**
 * The rows of a query result as JSON values for `sql --format json`: a `JSON` column as the JSON value it
 * holds (not its text: a {@link RawJson}, written by {@link stringifyRows}), `TIMESTAMP WITH TIME ZONE` as ISO 8601 with its offset (`2024-01-02T03:04:05.123456Z`,
 * microseconds kept), `TIMESTAMP` as ISO 8601 without one, integers as numbers while they are exact
 * (beyond 2^53 as decimal strings), `INTERVAL` as DuckDB's text ({@link intervalText}), other values as
 * DuckDB's JSON conversion gives them (dates, lists, structs, decimals as text).
 */
export function jsonRows(result: DuckDBResultReader): Record<string, unknown>[] {
  const names = result.columnNames();
  const convert = result.columnTypes().map((type) => {
    if (type.alias === 'JSON') return rawJson;
    switch (String(type)) {
      case 'TIMESTAMP WITH TIME ZONE':
        return isoTimestamp;
      case 'TIMESTAMP':
      case 'TIMESTAMP_S':
      case 'TIMESTAMP_MS':
      case 'TIMESTAMP_NS':
        return (v: unknown) => (typeof v === 'string' ? v.replace(' ', 'T') : v);
      case 'BIGINT':
      case 'UBIGINT':
      case 'HUGEINT':
      case 'UHUGEINT':
        return exactNumber;
      case 'INTERVAL':
        return intervalText;
      default:
        return (v: unknown) => v;
    }
  });
  return result.getRowsJson().map((row) => rowObject(names, row, (value, i) => convert[i]!(value)));
}

/**
 * One result row as an object keyed by column name. Every name is a plain key (`__proto__` too: an
 * assignment would set the prototype and lose the column); the names must be distinct (see sql-statements.ts).
 */
export function rowObject(
  names: readonly string[],
  values: readonly unknown[],
  convert: (value: unknown, column: number) => unknown = (value) => value,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  names.forEach((name, i) => {
    Object.defineProperty(out, name, {
      value: convert(values[i], i),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });
  return out;
}

/**
 * An `INTERVAL` as DuckDB writes it (`9 days 08:04:00`, `1 year 2 months -3 days`): `getRowsJson` gives its
 * parts (`{months, days, micros}`), which no reader of a table or a CSV takes for a duration.
 */
export function intervalText(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const { months, days, micros } = value as { months?: unknown; days?: unknown; micros?: unknown };
  if (typeof months !== 'number' || typeof days !== 'number') return value;
  if (typeof micros !== 'string' && typeof micros !== 'number') return value;
  return String(new duckdbApi.DuckDBIntervalValue(months, days, BigInt(micros)));
}

function rawJson(value: unknown): unknown {
  return typeof value === 'string' ? new RawJson(value) : value;
}

/** `2024-01-02 03:04:05.123+00` (DuckDB's text) → `2024-01-02T03:04:05.123Z`; `+05:30` offsets kept. */
function isoTimestamp(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const m = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d)(?::?(\d\d))?$/.exec(value);
  if (!m) return value; // infinity and out-of-range years stay as DuckDB writes them
  const offset = m[3] === '+00' && (m[4] ?? '00') === '00' ? 'Z' : `${m[3]}:${m[4] ?? '00'}`;
  return `${m[1]}T${m[2]}${offset}`;
}

function exactNumber(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
}
