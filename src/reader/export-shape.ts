import type { DuckDBConnection } from '@duckdb/node-api';
import { withQueryTimeout } from './query-timeout.js';
import { readExtraKeys } from '../warehouse/serving-extra-keys.js';
import { reportWhere } from './report-rows.js';

/** Facts of the current export that the CSV endpoint needs before its first byte. */
export interface ExportShape {
  /** Current (not removed) reports: the rows the paged CSV export holds. */
  count: number;
  /**
   * Extra CSV columns after `CSV_COLUMNS` (docs/sources.md: plus any extra columns): every key of the current
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
    connection.runAndReadAll(`SELECT count(*)::DOUBLE FROM report_rows ${where.sql}`, where.params),
  );
  const keys = await withQueryTimeout(connection, timeoutMs, what, () =>
    connection.runAndReadAll(
      // Keys are unnested in the select list, never by a lateral join (which repeats the whole row, its
      // `extra` included, once per key: 50,000 keys of a 1 MB object ran out of memory at 256 MiB), and
      // no window or sort runs over the rows: memory scales with the distinct keys only.
      `SELECT key
       FROM (SELECT created_at, id, unnest(json_keys(extra)) AS key,
                    generate_subscripts(json_keys(extra), 1) AS pos
             FROM report_rows ${where.sql} AND extra IS NOT NULL)
       GROUP BY key
       ORDER BY min({'c': created_at, 'i': id, 'p': pos})`,
      where.params,
    ),
  );
  return {
    count: Number(count.getRows()[0]?.[0] ?? 0),
    extraColumns: keys.getRows().map((row) => String(row[0])),
  };
}

/**
 * {@link ExportShape.extraColumns} from the serving index (warehouse/serving-extra-keys.ts), which every
 * run keeps current: one read of a small table instead of a scan of every report's `extra`.
 *
 * @throws SyncError `READER_QUERY_TIMEOUT` past `timeoutMs`
 */
export async function servedExtraKeys(connection: DuckDBConnection, timeoutMs: number): Promise<string[]> {
  return withQueryTimeout(connection, timeoutMs, 'Reading the CSV export columns', () =>
    readExtraKeys(connection),
  );
}
