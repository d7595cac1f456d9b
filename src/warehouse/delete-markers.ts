import type { DuckDBConnection } from '@duckdb/node-api';

/** DuckDB's vector and row group sizes (rows): the units it keeps delete markers in. */
const VECTOR_ROWS = 2_048;
const VECTORS_PER_ROW_GROUP = 60;
/** Bytes held per vector with a deleted row, and per row group with one (fitted to the figures below). */
const BYTES_PER_VECTOR = 14 * 1024;
const BYTES_PER_ROW_GROUP = 256 * 1024;

/**
 * The memory (bytes) DuckDB holds for the deleted-row markers of `table` (SQL: `report_rows`, or a copy's,
 * qualified) once a statement has scanned it: ~14 KiB per 2,048-row vector that has a deleted row and
 * ~256 KiB per row group that has one. A merge replaces a changed report by a delete and an insert
 * (row-rewrite.ts), so after a night of uniform changes every vector has some; DuckDB loads the markers of
 * each row group it scans and keeps them, counted in `memory_limit` and never evicted.
 *
 * Measured with the lowest `memory_limit` DuckDB accepted after one scan: 36 MiB for the 4M-report
 * warehouse (2,147 such vectors in 37 row groups; this gives 38.6 MiB), 75 MiB at 10M after one night
 * (4,501 in 76; 80.5 MiB); on 2.5M rows, 21 MiB with 1 % deleted evenly (21.9), 6 MiB with one deleted row
 * per row group (5.5), 6 MiB with deletes in every tenth vector (7.0); nothing without deletes or for
 * vectors deleted whole. Reading it scans the table's row ids, which loads the markers it measures.
 *
 * @throws DuckDB's error when `table` cannot be read
 */
export async function deleteMarkerBytes(
  connection: DuckDBConnection,
  table = 'report_rows',
): Promise<number> {
  const row = (
    await connection.runAndReadAll(
      `WITH vectors AS (SELECT rowid // ${VECTOR_ROWS} AS v, count(*) AS live FROM ${table} GROUP BY v),
         stored AS (SELECT coalesce(max(rowid) + 1, 0) AS slots FROM ${table}),
         holed AS (SELECT v FROM vectors, stored WHERE live < least(${VECTOR_ROWS}, slots - v * ${VECTOR_ROWS}))
       SELECT count(*)::DOUBLE AS vectors, count(DISTINCT v // ${VECTORS_PER_ROW_GROUP})::DOUBLE AS groups
       FROM holed`,
    )
  ).getRowObjectsJS()[0]!;
  return Number(row.vectors) * BYTES_PER_VECTOR + Number(row.groups) * BYTES_PER_ROW_GROUP;
}
