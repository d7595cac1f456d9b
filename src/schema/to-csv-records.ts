import { stringify } from 'csv-stringify/sync';

/**
 * Serialises CSV records (RFC 4180): fields joined by `,`, every record ended by CRLF, a field quoted when it
 * holds `,`, `"` (doubled inside) or any line break. csv-stringify on its own only quotes a field holding the
 * record delimiter, so a lone `\n` inside a field (the sample's Köln `authorityNote` HTML) went out bare and
 * every CSV reader (csvkit, Python, DuckDB) split the record there; `quoted_match` closes that gap.
 * The simulator and the reader both write their CSV through this, so their bodies stay byte-equal.
 */
export function toCsvRecords(rows: readonly (readonly string[])[]): string {
  return stringify(rows as string[][], { record_delimiter: 'windows', quoted_match: /[\r\n]/ });
}
