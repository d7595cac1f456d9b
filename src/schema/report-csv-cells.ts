import type { Report } from './report.js';
import { jsonTextOf } from './json-text.js';

/**
 * The cells of one report's CSV row: `CSV_COLUMNS` order (`id,status,destination,category,description,
 * lat,lng,address,createdAt,updatedAt`, DESIGN.md §2), then one cell per name in `extraColumns` taken from
 * `report.extra`. Cell rules are {@link csvCell}'s. The simulator and the reader both build their rows here,
 * which is what keeps their CSV bodies byte-equal.
 */
export function reportCsvCells(report: Report, extraColumns: readonly string[]): string[] {
  const cells = [
    report.id,
    report.status,
    report.destination,
    report.category ?? '',
    report.description ?? '',
    report.lat === null ? '' : String(report.lat),
    report.lng === null ? '' : String(report.lng),
    report.address ?? '',
    report.createdAt,
    report.updatedAt,
  ];
  for (const column of extraColumns) cells.push(csvCell(report.extra?.[column]));
  return cells;
}

/**
 * The text of one CSV cell: `null`/missing → empty cell; numbers → `String(n)`; strings as they are; other
 * values (objects, arrays, booleans, a `JsonText` number) → their JSON text, exactly. Quoting (RFC 4180) is csv-stringify's job.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return jsonTextOf(value);
}
