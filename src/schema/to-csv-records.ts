import { stringify } from 'csv-stringify/sync';
import type { CsvCell } from './report-csv-cells.js';

/**
 * Serialises CSV records (RFC 4180): fields joined by `,`, every record ended by CRLF, a field quoted when it
 * holds `,`, `"` (doubled inside) or any line break. csv-stringify on its own only quotes a field holding the
 * record delimiter, so a lone `\n` inside a field (the sample's Köln `authorityNote` HTML) went out bare and
 * every CSV reader (csvkit, Python, DuckDB) split the record there; `quoted_match` closes that gap.
 * NULL (`null`) is an unquoted empty cell and the empty string is `""` (`quoted_empty` on that cell): PostgreSQL's
 * `COPY … CSV` rule, so a reader tells the two apart (extract/csv.ts does).
 * The simulator and the reader both write their CSV through this, so their bodies stay byte-equal.
 */
export function toCsvRecords(rows: readonly (readonly CsvCell[])[]): string {
  return stringify(rows as CsvCell[][], {
    record_delimiter: 'windows',
    quoted_match: /[\r\n]/,
    // `quoted_empty: true` as an option would quote NULL too: only the empty string gets it, per cell.
    cast: { string: (value) => (value === '' ? { value, quoted_empty: true } : value) },
  });
}
