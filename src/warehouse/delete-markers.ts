import type { DuckDBConnection } from '@duckdb/node-api';

/** Bytes DuckDB holds per row slot of a row group with deleted rows, once a scan loaded it (measured). */
const BYTES_PER_SLOT = 8;

/**
 * The memory (bytes) DuckDB holds for the deleted-row markers of `table` (SQL: `report_rows`, or a copy's,
 * qualified) once a statement has scanned it: 8 bytes per stored row slot when the table holds deleted rows, else 0. A merge replaces a changed row
 * by a delete and an insert (row-rewrite.ts), so after a night the deletes are spread over every row group;
 * DuckDB then loads a per-vector array of delete markers for each row group it scans and keeps them in
 * memory, counted in `memory_limit` and never evicted. Measured with the lowest `memory_limit` DuckDB
 * accepted after one scan: 36 MiB for 4.6M slots at 4M reports, 75 MiB for 10.2M at 10M, nothing for a
 * copy of the same rows without deletes. Fully deleted row groups are dropped at a checkpoint, so the
 * stored slots are those of `max(rowid) + 1`.
 *
 * @throws DuckDB's error when `report_rows` cannot be read
 */
export async function deleteMarkerBytes(
  connection: DuckDBConnection,
  table = 'report_rows',
): Promise<number> {
  const row = (
    await connection.runAndReadAll(
      `SELECT count(*)::DOUBLE AS live, coalesce(max(rowid) + 1, 0)::DOUBLE AS slots FROM ${table}`,
    )
  ).getRowObjectsJS()[0]!;
  const [live, slots] = [Number(row.live), Number(row.slots)];
  return slots > live ? BYTES_PER_SLOT * slots : 0;
}
