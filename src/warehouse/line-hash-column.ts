/** The `report_rows` columns that hold the hash of the raw line a report was last read from, by source. */
const LINE_HASH_COLUMNS: Record<string, string> = { csv: 'csv_line_hash' };

/** Every line-hash column (migration 020). */
export const ALL_LINE_HASH_COLUMNS = ['line_hash', 'csv_line_hash'] as const;

/**
 * The column of `report_rows` that holds, for `source`, the hash of the raw line (CSV row) the report was
 * last read from: `csv_line_hash` for the CSV export, `line_hash` for the others. Kept apart so that a run
 * of one source leaves the other's hashes valid (migration 020): a weekly CSV run does not make the next
 * NDJSON run parse every line again.
 */
export function lineHashColumn(source: string): string {
  return LINE_HASH_COLUMNS[source] ?? 'line_hash';
}

/**
 * `SELECT … REPLACE` items for a report whose content a run of `source` wrote (an update, a revive): the
 * source's line hash from `value`, the other sources' hashes NULL (their lines held the old content).
 */
export function lineHashValues(source: string, value: string): string {
  const own = lineHashColumn(source);
  return ALL_LINE_HASH_COLUMNS.map((col) => `${col === own ? value : 'NULL::BIGINT'} AS ${col}`).join(', ');
}
