import { isUtf8 } from 'node:buffer';

const COMMA = 0x2c;
const QUOTE = 0x22;
const CR = 0x0d;
const LF = 0x0a;
/** How far into a row its id cell is looked for: ids sit near the start of real exports. */
const MAX_SCAN_BYTES = 64 * 1024;

/**
 * The text of cell `column` (0-based) of the CSV row starting at `bytes[0]`, read from its first bytes
 * alone, when that cell and every cell before it are complete: for a row csv-parse refused whole (longer
 * than `REPORTS_MAX_RECORD_BYTES`, a broken quote after the id), so that its quarantined copy still names
 * its report. RFC 4180 cells with the default delimiter and quote (as csv.ts parses them): a quoted cell ends
 * at a quote not doubled and must be followed by `,` or a line break; an unquoted one holds no quote.
 * Undefined when the cell is not reached within 64 KiB, the row ends before it, a cell before it is
 * broken, or its bytes are not UTF-8. Never throws.
 */
export function csvCellFromPrefix(bytes: Uint8Array, column: number): string | undefined {
  const end = Math.min(bytes.length, MAX_SCAN_BYTES);
  let at = 0;
  for (let cell = 0; ; cell++) {
    const start = at;
    let value: Uint8Array;
    if (bytes[at] === QUOTE) {
      const parts: Uint8Array[] = [];
      let from = ++at;
      for (;;) {
        const quote = bytes.indexOf(QUOTE, at);
        if (quote === -1 || quote >= end) return undefined;
        if (bytes[quote + 1] === QUOTE) {
          parts.push(bytes.subarray(from, quote + 1));
          at = from = quote + 2;
          continue;
        }
        parts.push(bytes.subarray(from, quote));
        at = quote + 1;
        break;
      }
      value = Buffer.concat(parts);
    } else {
      while (at < end && bytes[at] !== COMMA && bytes[at] !== CR && bytes[at] !== LF) {
        if (bytes[at] === QUOTE) return undefined;
        at++;
      }
      if (at >= end) return undefined;
      value = bytes.subarray(start, at);
    }
    const next = bytes[at];
    if (next !== COMMA && next !== CR && next !== LF) return undefined;
    if (cell === column) return isUtf8(value) ? Buffer.from(value).toString('utf8') : undefined;
    if (next !== COMMA) return undefined; // the row ends before the cell
    at++;
  }
}

/**
 * True when `bytes` (one line of a CSV page, its line break left out) is whole RFC 4180 cells: each quoted
 * cell closes on the line and is followed by `,` or the line's end, no unquoted cell holds a quote. The
 * row such a line starts, refused for its size, ended at that line break: the next line starts a row of
 * its own. False for a line that may end inside a quoted cell. Linear, never throws.
 */
export function cellsCloseOnLine(bytes: Uint8Array): boolean {
  let end = bytes.length;
  if (end > 0 && bytes[end - 1] === CR) end--;
  let at = 0;
  for (;;) {
    if (bytes[at] === QUOTE) {
      for (at++; ; at += 2) {
        const quote = bytes.indexOf(QUOTE, at);
        if (quote === -1 || quote >= end) return false;
        at = quote;
        if (bytes[quote + 1] !== QUOTE) break;
      }
      at++;
    } else {
      while (at < end && bytes[at] !== COMMA) if (bytes[at++] === QUOTE) return false;
    }
    if (at >= end) return at === end;
    if (bytes[at] !== COMMA) return false;
    at++;
  }
}
