import type { DuckDBConnection } from '@duckdb/node-api';
import { REPORT_COLUMN_COUNT, REPORT_COLUMNS_SQL, rowToReport } from '../schema/report-row.js';
import { canonicalJson } from '../schema/wire-format.js';

/** A stored report as {@link currentWireTexts} gives it. */
export interface StoredWire {
  /** Its canonical wire JSON. */
  text: string;
  /** It was last written by a CSV run: its unknown fields are a CSV reading (text, absent read as `null`). */
  fromCsv: boolean;
}

/**
 * The current (not tombstoned) reports among `ids` as their canonical wire JSON (`canonicalJson` of
 * schema/wire-format.ts: what the NDJSON export and the reader write for them, unknown fields exact):
 * id → {@link StoredWire}. Ids not in the warehouse, or tombstoned, are absent. One scan of `report_rows`
 * (no key index, migration 004), as `currentHashes` does.
 */
export async function currentWireTexts(
  connection: DuckDBConnection,
  ids: readonly string[],
): Promise<Map<string, StoredWire>> {
  const out = new Map<string, StoredWire>();
  if (ids.length === 0) return out;
  const rows = (
    await connection.runAndReadAll(
      `SELECT ${REPORT_COLUMNS_SQL}, source FROM report_rows
       WHERE removed_at IS NULL AND id IN (SELECT unnest(from_json($ids, '["VARCHAR"]')))`,
      { ids: JSON.stringify(ids) },
    )
  ).getRowsJS();
  for (const row of rows) {
    out.set(String(row[0]), {
      text: canonicalJson(rowToReport(row)),
      fromCsv: row[REPORT_COLUMN_COUNT] === 'csv',
    });
  }
  return out;
}
