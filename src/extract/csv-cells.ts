const QUOTE = 0x22;
const COMMA = 0x2c;
const BOM = [0xef, 0xbb, 0xbf];

/**
 * Sets to `null` the cells of one parsed CSV record that were empty and unquoted, leaving a quoted `""` as
 * the empty string (PostgreSQL's `COPY … CSV` rule: an unquoted empty cell is NULL). csv-parse tells the two
 * apart only through its `cast` option, which builds an info object per cell (measured: ~half of a CSV
 * page's decoding time), so the record's own bytes are read again instead, and only for a record that
 * holds an empty cell.
 *
 * The record must come from csv-parse with the default delimiter (`,`), quote and escape (`"`), without
 * `relax_quotes` (a quote inside an unquoted cell is an error there, so a cell is quoted exactly when its
 * first byte is `"`) and with `skip_empty_lines` (blank lines before the record are skipped here too).
 *
 * @param input the bytes csv-parse read
 * @param from where the record's bytes start in `input` (csv-parse's `info.bytes` after the previous record)
 * @param cells the record's cells, changed in place
 * @param delimiters the record delimiters csv-parse was given
 * @param bom whether csv-parse skipped a UTF-8 BOM at offset 0
 */
export function nullUnquotedEmpty(
  input: Uint8Array,
  from: number,
  cells: Array<string | null>,
  delimiters: readonly string[],
  bom: boolean,
): void {
  if (!cells.includes('')) return;
  let at = from;
  if (bom && at === 0 && BOM.every((b, i) => input[i] === b)) at = BOM.length;
  at = pastBlankLines(input, at, delimiters);
  for (let i = 0; i < cells.length; i++) {
    const quoted = input[at] === QUOTE;
    if (!quoted && cells[i] === '') cells[i] = null;
    if (i === cells.length - 1) break;
    if (quoted) at = pastClosingQuote(input, at + 1);
    while (at < input.length && input[at] !== COMMA) at++;
    at++;
  }
}

/** The offset past the quote closing a quoted cell whose content starts at `at` (`""` is an escaped quote). */
function pastClosingQuote(input: Uint8Array, at: number): number {
  let i = at;
  while (i < input.length) {
    if (input[i] !== QUOTE) i++;
    else if (input[i + 1] === QUOTE) i += 2;
    else return i + 1;
  }
  return i;
}

function pastBlankLines(input: Uint8Array, at: number, delimiters: readonly string[]): number {
  let i = at;
  for (let moved = true; moved;) {
    moved = false;
    for (const d of delimiters) {
      if (startsWith(input, i, d)) {
        i += d.length;
        moved = true;
      }
    }
  }
  return i;
}

function startsWith(input: Uint8Array, at: number, ascii: string): boolean {
  if (at + ascii.length > input.length) return false;
  for (let k = 0; k < ascii.length; k++) if (input[at + k] !== ascii.charCodeAt(k)) return false;
  return true;
}
