import type { DuckDBConnection } from '@duckdb/node-api';
import { extraFromJson } from '../schema/json-text.js';
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
      `SELECT id, status, destination, category, description, lat, lng, address,
         epoch_ms(created_at)::DOUBLE, epoch_ms(updated_at)::DOUBLE, extra::VARCHAR, source
       FROM report_rows
       WHERE removed_at IS NULL AND id IN (SELECT unnest(from_json($ids, '["VARCHAR"]')))`,
      { ids: JSON.stringify(ids) },
    )
  ).getRowsJS();
  for (const row of rows) {
    const extra = row[10] as string | null;
    const text = canonicalJson({
      id: row[0] as string,
      status: row[1] as string,
      destination: row[2] as string,
      category: row[3] as string | null,
      description: row[4] as string | null,
      lat: row[5] as number | null,
      lng: row[6] as number | null,
      address: row[7] as string | null,
      createdAt: new Date(row[8] as number).toISOString(),
      updatedAt: new Date(row[9] as number).toISOString(),
      extra: extra === null ? null : extraFromJson(extra),
    });
    out.set(String(row[0]), { text, fromCsv: row[11] === 'csv' });
  }
  return out;
}
