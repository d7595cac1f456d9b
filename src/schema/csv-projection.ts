import { csvCell } from './report-csv-cells.js';
import { contentHash, type Report } from './report.js';

/**
 * The report as the CSV export carries it and `validateCsvReport` reads it back: every unknown field as the
 * text of its CSV cell ({@link csvCell}: `5` → `"5"`, `true` → `"true"`, `{"a":1}` → its JSON text), a NULL
 * cell (`null`) left out and `""` kept (PostgreSQL's `COPY … CSV` rule: a quoted empty cell is text), keys
 * in code-unit order. The order matters: a CSV row's fields come in the export's column order (the union of
 * every report's unknown fields), an NDJSON line's in its own order, so the same report reads in two orders.
 * The known fields are already canonical in a {@link Report} (numbers, UTC timestamps, string ids), so they
 * are the same from either source. Must mirror `csvExtra` of report.ts.
 */
export function csvProjection(report: Report): Report {
  const extra = report.extra;
  if (extra === null || isOwnProjection(extra)) return report;
  let projected: Record<string, unknown> | null = null;
  for (const key of Object.keys(extra).sort()) {
    const cell = csvCell(extra[key]);
    if (cell === null) continue;
    projected ??= Object.create(null) as Record<string, unknown>;
    projected[key] = cell;
  }
  return { ...report, extra: projected };
}

/**
 * Whether `extra` is already its own projection: text values only, keys in code-unit order. Then the
 * projection is the report itself and so is its hash (a CSV page whose columns come sorted, or an NDJSON
 * line with only text fields in that order, saves a second serialisation and SHA-1 per record).
 */
function isOwnProjection(extra: Record<string, unknown>): boolean {
  let previous: string | undefined;
  for (const key of Object.keys(extra)) {
    if (typeof extra[key] !== 'string' || (previous !== undefined && !(previous < key))) return false;
    previous = key;
  }
  return true;
}

/**
 * The content hash of {@link csvProjection}: equal for the NDJSON and the CSV reading of the same upstream
 * report, whatever the order of its fields, so the merge can tell a representation difference (CSV cells
 * are text, columns in the export's order) from a change.
 *
 * @param hash the report's own content hash, returned when the projection is the report itself (no
 *   unknown fields)
 */
export function csvProjectionHash(report: Report, hash: string): string {
  const projected = csvProjection(report);
  return projected === report ? hash : contentHash(projected);
}
