import type { Report } from '../schema/wire-format.js';
import { csvCell, reportCsvCells } from '../schema/report-csv-cells.js';
import { toCsvRecords } from '../schema/to-csv-records.js';

/**
 * Writes CSV rows of the reader's export byte-equal to `toCsvRecords(reportCsvCells(report, extraColumns))`
 * (the simulator's rows), at a cost that follows the keys a report holds rather than the number of extra
 * columns: most reports hold none of them, and one report with 50,000 unknown fields gives every row of the
 * export 50,000 extra columns. NULL cells are runs of commas (an empty string is `""`); a present value is quoted as csv-stringify
 * quotes one field (quoting is per field, so a one-cell record is the same text).
 */
export class CsvRows {
  readonly #extraColumns: readonly string[];
  readonly #index: Map<string, number>;

  constructor(extraColumns: readonly string[]) {
    this.#extraColumns = extraColumns;
    this.#index = new Map(extraColumns.map((name, i) => [name, i]));
  }

  /** One CSV record of `report`, CRLF-terminated. */
  row(report: Report): string {
    const fixed = toCsvRecords([reportCsvCells(report, [])]).slice(0, -2);
    const n = this.#extraColumns.length;
    if (n === 0) return `${fixed}\r\n`;
    const present: Array<[number, string]> = [];
    for (const [key, value] of Object.entries(report.extra ?? {})) {
      const at = this.#index.get(key);
      const cell = csvCell(value);
      if (at !== undefined && cell !== null) present.push([at, cell]);
    }
    present.sort((a, b) => a[0] - b[0]);
    let text = fixed;
    let next = 0; // the next extra column to write
    for (const [at, cell] of present) {
      text += ','.repeat(at - next + 1) + toCsvRecords([[cell]]).slice(0, -2);
      next = at + 1;
    }
    return `${text}${','.repeat(n - next)}\r\n`;
  }
}
