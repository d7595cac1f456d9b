// The row layout lives with the schema: the warehouse reads stored reports back the same way.
export { REPORT_COLUMN_COUNT, REPORT_COLUMNS_SQL, rowToReport } from '../schema/report-row.js';

/** A filter of the list and GeoJSON endpoints: both given = AND (docs/upstream-contract.md rule 1). */
export interface ReportFilter {
  destination?: string | undefined;
  status?: string | undefined;
}

/** Export order (NDJSON, CSV): creation order, `createdAt` ascending then `id`, as the upstream's export. */
export const EXPORT_ORDER_SQL = 'created_at ASC, id ASC';
/** List order (docs/sources.md): newest first, `createdAt` descending then `id` ascending. */
export const NEWEST_FIRST_SQL = 'created_at DESC, id ASC';

/**
 * The `WHERE` clause of the reports the reader serves, with bound parameters only (never spliced values):
 * removed reports (tombstones, `removed_at` set) are left out; `destination` and `status` are AND-ed when
 * given (upstream contract rule 1); no filter = every current report (rule 3).
 *
 * @returns SQL text starting with `WHERE` and its named parameters (`$destination`, `$status`)
 */
export function reportWhere(filter: ReportFilter = {}): { sql: string; params: Record<string, string> } {
  const conditions = reportConditions(filter);
  return { sql: `WHERE ${conditions.sql}`, params: conditions.params };
}

/** The conditions of {@link reportWhere} without the `WHERE` (`removed_at IS NULL AND …`). */
export function reportConditions(filter: ReportFilter = {}): {
  sql: string;
  params: Record<string, string>;
} {
  const clauses = ['removed_at IS NULL'];
  const params: Record<string, string> = {};
  if (filter.destination !== undefined) {
    clauses.push('destination = $destination');
    params.destination = filter.destination;
  }
  if (filter.status !== undefined) {
    clauses.push('status = $status');
    params.status = filter.status;
  }
  return { sql: clauses.join(' AND '), params };
}
