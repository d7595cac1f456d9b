import { CSV_COLUMNS } from '../schema/wire-format.js';
import { csvCell as cell, reportCsvCells, type CsvCell } from '../schema/report-csv-cells.js';
import type { BodyRecord } from './record-faults.js';

/**
 * The cells of one CSV row, in `CSV_COLUMNS` order followed by `extraColumns` (docs/sources.md).
 * Cell rules: `null`/missing → an unquoted empty cell (NULL), `""` → a quoted empty cell; numbers → `String(n)`; strings as they are; other values
 * (objects, arrays, booleans) → their JSON text.
 *
 * A wart (a line the upstream's export leaks, see dataset.ts) becomes a best-effort row, so the same
 * problem reaches the CSV reader as the NDJSON reader:
 * - when its raw line parses as a JSON object, its fields fill the columns as they are, unvalidated
 *   (`location.lat`/`lng` or the top-level aliases `lat`/`latitude`, `lng`/`lon`/`long`/`longitude` fill
 *   `lat`/`lng`; keys that are no column are dropped);
 * - otherwise every cell is empty except `description`, which holds the raw line (so the row is refused
 *   for its empty `id`).
 */
export function csvCells(record: BodyRecord, extraColumns: readonly string[]): CsvCell[] {
  if (record.kind === 'report') return reportCsvCells(record.report, extraColumns);
  const raw = record.kind === 'wart' ? record.raw : record.text;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [...CSV_COLUMNS, ...extraColumns].map((column) => (column === 'description' ? raw : null));
  }
  return wartCells(value as Record<string, unknown>, extraColumns);
}

function wartCells(obj: Record<string, unknown>, extraColumns: readonly string[]): CsvCell[] {
  const loc =
    typeof obj.location === 'object' && obj.location !== null
      ? (obj.location as Record<string, unknown>)
      : {};
  const lat = loc.lat ?? loc.latitude ?? obj.lat ?? obj.latitude;
  const lng =
    loc.lng ?? loc.lon ?? loc.long ?? loc.longitude ?? obj.lng ?? obj.lon ?? obj.long ?? obj.longitude;
  const cells = CSV_COLUMNS.map((column) => {
    if (column === 'lat') return cell(lat);
    if (column === 'lng') return cell(lng);
    return cell(obj[column]);
  });
  for (const column of extraColumns) cells.push(cell(obj[column]));
  return cells;
}
