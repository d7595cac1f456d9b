import type { Report } from './wire-format.js';
import { jsonTextOf } from './json-text.js';

/**
 * The cells of one report's CSV row: `CSV_COLUMNS` order (`id,status,destination,category,description,
 * lat,lng,address,createdAt,updatedAt`, docs/sources.md; `null` for NULL, see {@link CsvCell}), then one cell per name in `extraColumns` taken from
 * `report.extra`. Cell rules are {@link csvCell}'s. The simulator and the reader both build their rows here,
 * which is what keeps their CSV bodies byte-equal.
 */
export function reportCsvCells(report: Report, extraColumns: readonly string[]): CsvCell[] {
  const cells: CsvCell[] = [
    report.id,
    report.status,
    report.destination,
    report.category,
    report.description,
    report.lat === null ? null : String(report.lat),
    report.lng === null ? null : String(report.lng),
    report.address,
    report.createdAt,
    report.updatedAt,
  ];
  for (const column of extraColumns) cells.push(csvCell(report.extra?.[column]));
  return cells;
}

/**
 * One CSV cell: text, or `null` for NULL. `toCsvRecords` writes `null` as an unquoted empty cell and the
 * empty string as `""` (PostgreSQL's `COPY … CSV` rule, which the CSV reader of extract/csv.ts applies).
 */
export type CsvCell = string | null;

/**
 * The {@link CsvCell} of one value: `null`/missing → `null`; numbers → `String(n)`; strings as they are;
 * other values (objects, arrays, booleans) → their JSON text. Quoting (RFC 4180) is csv-stringify's job.
 */
export function csvCell(value: unknown): CsvCell {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return jsonTextOf(value);
}
