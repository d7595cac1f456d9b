import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Content hashes of the current (not tombstoned) reports among `ids`: id → `reports.content_hash`. Ids
 * not in the warehouse, or tombstoned, are absent. One scan of `reports` (no key index, migration 004),
 * pruned to the two columns it reads.
 */
export async function currentHashes(
  connection: DuckDBConnection,
  ids: readonly string[],
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (ids.length === 0) return out;
  const rows = (
    await connection.runAndReadAll(
      `SELECT id, content_hash FROM report_rows
       WHERE removed_at IS NULL AND id IN (SELECT unnest(from_json($ids, '["VARCHAR"]')))`,
      { ids: JSON.stringify(ids) },
    )
  ).getRowsJS();
  for (const [id, hash] of rows) out.set(String(id), String(hash));
  return out;
}
