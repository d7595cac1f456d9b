import type { DuckDBValue } from '@duckdb/node-api';
import pg from 'pg';
import type { Warehouse } from '../../src/warehouse/database.js';

/**
 * How a column is compared: instants as epoch microseconds, JSON parsed, numbers as numbers; `exact`: JSON
 * as its text, byte for byte.
 */
type Kind = 'text' | 'ts' | 'json' | 'exact' | 'num' | 'int' | 'bool';

/** A compared column: its PostgreSQL name, how it is compared, and its DuckDB name when that differs. */
type Column = [name: string, kind: Kind, duckName?: string];

/** The business columns of the relations compared (what analysts query), with how to compare them. */
const BUSINESS: Column[] = [
  ['status', 'text'],
  ['destination', 'text'],
  ['category', 'text'],
  ['description', 'text'],
  ['lat', 'num'],
  ['lng', 'num'],
  ['address', 'text'],
  ['created_at', 'ts'],
  ['updated_at', 'ts'],
  ['extra', 'json'],
];

/** Relations compared, each with its columns. */
export const COMPARED: Record<string, { columns: Column[] }> = {
  // The upstream's unknown fields as received (`json`), byte-exact: the text the reader on PostgreSQL serves.
  report_rows: {
    columns: [
      ['id', 'text'],
      ['extra_json', 'exact', 'extra'],
    ],
  },
  reports: {
    columns: [
      ['id', 'text'],
      ...BUSINESS,
      ['first_seen_at', 'ts'],
      ['last_seen_at', 'ts'],
      ['last_changed_at', 'ts'],
      ['removed_at', 'ts'],
      ['source', 'text'],
      ['run_id', 'text'],
      ['version_change', 'text'],
      ['version_run_id', 'text'],
    ],
  },
  report_versions: {
    columns: [
      ['id', 'text'],
      ['valid_from', 'ts'],
      ['valid_to', 'ts'],
      ['change', 'text'],
      ...BUSINESS,
      ['run_id', 'text'],
    ],
  },
  current_reports: { columns: [['id', 'text'], ...BUSINESS] },
  sync_runs: {
    columns: [
      ['run_id', 'text'],
      ['job', 'text'],
      ['source', 'text'],
      ['status', 'text'],
      ['started_at', 'ts'],
      ['finished_at', 'ts'],
      ['records_read', 'int'],
      ['records_rejected', 'int'],
      ['inserted', 'int'],
      ['updated', 'int'],
      ['removed', 'int'],
      ['complete', 'bool'],
      ['error', 'json'],
      ['seen_all_at', 'ts'],
      ['merged_at', 'ts'],
    ],
  },
  rejected_records: {
    columns: [
      ['run_id', 'text'],
      ['location', 'text'],
      ['record_id', 'text'],
      ['raw', 'text'],
      ['raw_bytes', 'int'],
      ['issues', 'json'],
      ['rejected_at', 'ts'],
    ],
  },
  stats_snapshots: {
    columns: [
      ['taken_at', 'ts'],
      ['run_id', 'text'],
      ['source', 'text'],
      ['body', 'json'],
    ],
  },
  stats_values: {
    columns: [
      ['run_id', 'text'],
      ['source', 'text'],
      ['metric', 'text'],
      ['value', 'num'],
    ],
  },
  drift_events: {
    columns: [
      ['run_id', 'text'],
      ['kind', 'text'],
      ['field', 'text'],
      ['value', 'text'],
      ['count', 'int'],
    ],
  },
};

const asText = (k: Kind) => k === 'json' || k === 'exact' || k === 'int';
const duckExpr = (c: string, k: Kind) =>
  k === 'ts' ? `epoch_us("${c}")::VARCHAR` : asText(k) ? `"${c}"::VARCHAR` : `"${c}"`;
const pgExpr = (c: string, k: Kind) =>
  k === 'ts' ? `(extract(epoch from "${c}") * 1000000)::bigint::text` : asText(k) ? `"${c}"::text` : `"${c}"`;

function normalize(row: Record<string, unknown>, columns: Column[]): unknown[] {
  return columns.map(([c, k]) => {
    const v = row[c];
    if (v === null || v === undefined) return null;
    if (k === 'json') return JSON.parse(String(v)) as unknown;
    if (k === 'num') return Number(v);
    return v;
  });
}

/** Rows in one order whatever the engine's collation (by their JSON text). */
function sorted(rows: unknown[][]): unknown[][] {
  return rows
    .map((r) => [JSON.stringify(r), r] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, r]) => r);
}

/** Whether a DuckDB row holds text PostgreSQL cannot store (U+0000, or its JSON escape). */
export function holdsNul(row: unknown[]): boolean {
  return JSON.stringify(row).includes('\\u0000');
}

/** The rows of `relation` in DuckDB, normalized for comparison, in the relation's order. */
export async function duckRows(warehouse: Warehouse, relation: string): Promise<unknown[][]> {
  const { columns } = COMPARED[relation]!;
  const c = await warehouse.connect();
  try {
    const reader = await c.runAndReadAll(
      `SELECT ${columns.map(([n, k, d]) => `${duckExpr(d ?? n, k)} AS "${n}"`).join(', ')} FROM ${relation}`,
      {} as Record<string, DuckDBValue>,
    );
    return sorted(reader.getRowObjectsJS().map((r) => normalize(r, columns)));
  } finally {
    c.closeSync();
  }
}

/** The rows of `relation` in PostgreSQL's `schema`, normalized as {@link duckRows}. */
export async function pgRows(url: string, schema: string, relation: string): Promise<unknown[][]> {
  const { columns } = COMPARED[relation]!;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const res = await client.query<Record<string, unknown>>(
      `SELECT ${columns.map(([n, k]) => `${pgExpr(n, k)} AS "${n}"`).join(', ')}
       FROM ${pg.escapeIdentifier(schema)}.${relation}`,
    );
    return sorted(res.rows.map((r) => normalize(r, columns)));
  } finally {
    await client.end();
  }
}

/** One query on PostgreSQL with `search_path` at `schema`. */
export async function pgQuery<T extends Record<string, unknown>>(
  url: string,
  schema: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SET search_path TO ${pg.escapeIdentifier(schema)}`);
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}
