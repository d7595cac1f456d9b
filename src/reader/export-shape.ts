import type { DuckDBConnection } from '@duckdb/node-api';
import { withQueryTimeout } from './query-timeout.js';
import { reportWhere } from './report-rows.js';

/** Facts of the current export that the CSV endpoint needs before its first byte. */
export interface ExportShape {
  /** Current (not removed) reports: the rows the paged CSV export holds. */
  count: number;
  /**
   * Extra CSV columns after `CSV_COLUMNS` (DESIGN.md §2: "plus any extra columns"): every key of the current
   * reports' `extra`, in first-seen order along the export order (`createdAt`, `id`), keys of one report in
   * their stored order: the rule the simulator applies to its dataset, so both headers agree.
   */
  extraColumns: string[];
}

/**
 * Reads {@link ExportShape} (two queries; run it in the response's read transaction so it matches the body).
 * The column scan reads every `extra`: the reader caches the result per data state (VersionCache).
 *
 * @throws SyncError `READER_QUERY_TIMEOUT` past `timeoutMs`
 */
export async function readExportShape(connection: DuckDBConnection, timeoutMs: number): Promise<ExportShape> {
  const where = reportWhere();
  const what = 'Reading the CSV export columns';
  const count = await withQueryTimeout(connection, timeoutMs, what, () =>
    connection.runAndReadAll(`SELECT count(*)::DOUBLE FROM reports ${where.sql}`, where.params),
  );
  const keys = await withQueryTimeout(connection, timeoutMs, what, () =>
    connection.runAndReadAll(
      `SELECT k.key
       FROM (SELECT row_number() OVER (ORDER BY created_at, id) AS rn, extra
             FROM reports ${where.sql} AND extra IS NOT NULL) AS r,
            unnest(json_keys(r.extra)) WITH ORDINALITY AS k(key, pos)
       GROUP BY k.key
       ORDER BY min(r.rn), arg_min(k.pos, r.rn)`,
      where.params,
    ),
  );
  return {
    count: Number(count.getRows()[0]?.[0] ?? 0),
    extraColumns: keys.getRows().map((row) => String(row[0])),
  };
}
