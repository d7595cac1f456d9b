import { parse } from 'csv-parse/sync';
import { nullUnquotedEmpty } from './csv-cells.js';

// Row bounds of a CSV page held whole (extract/csv.ts): where rows start and end, which line break ends
// them, and the raw text of a line, all from byte offsets.

export const NL = 0x0a;
const QUOTE = 0x22;
const CR = 0x0d;

/** The cells of one CSV record: text, or `null` for an unquoted empty cell (PostgreSQL `COPY … CSV`). */
export type Cells = Array<string | null>;

/**
 * Runs csv-parse over `input`, calling `onRecord` with each record's cells and the offset just past it
 * (`info.bytes`, BOM included). Throws csv-parse's `CsvError` at the first malformed record.
 */
export function parseRecords(
  input: Buffer,
  delimiter: string | string[],
  bom: boolean,
  maxRecordBytes: number,
  onRecord: (fields: Cells, bytes: number) => void,
): void {
  const delimiters = typeof delimiter === 'string' ? [delimiter] : delimiter;
  let from = 0;
  parse(input, {
    bom,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: maxRecordBytes,
    record_delimiter: delimiter,
    on_record: (fields: Cells, info: { bytes: number }) => {
      // An unquoted empty cell is NULL, a quoted "" the empty string (PostgreSQL's COPY … CSV rule).
      nullUnquotedEmpty(input, from, fields, delimiters, bom);
      from = info.bytes;
      onRecord(fields, info.bytes);
      return null;
    },
  });
}

/**
 * A row with too many cells that holds bare LFs, split at them: the rows with their offsets when every
 * part has exactly `width` cells, else `null` (then the row stays one ragged row).
 */
export function splitAtBareLf(
  body: Buffer,
  start: number,
  end: number,
  width: number,
): Array<{ fields: Cells; start: number; end: number }> | null {
  const parts: Array<{ fields: Cells; start: number; end: number }> = [];
  let last = start;
  try {
    parseRecords(body.subarray(start, end), ['\r\n', '\n'], false, end - start + 1, (fields, bytes) => {
      const partStart = skipLineBreaks(body, last);
      last = start + bytes;
      parts.push({ fields, start: partStart, end: last });
    });
  } catch {
    return null;
  }
  return parts.length > 1 && parts.every((p) => p.fields.length === width) ? parts : null;
}

/**
 * The row starting at `start` read with LF accepted as a row end: tries each line break after `start` (up
 * to `maxBytes` away) as the end of one row, and returns the first that gives exactly one row of `width`
 * cells, or `null`.
 */
export function rowEndedByLf(
  body: Buffer,
  start: number,
  width: number,
  maxBytes: number,
): { fields: Cells; end: number } | null {
  for (let nl = body.indexOf(NL, start); nl !== -1 && nl - start <= maxBytes; nl = body.indexOf(NL, nl + 1)) {
    if (body[nl - 1] === CR) continue;
    const rows: Cells[] = [];
    try {
      parseRecords(body.subarray(start, nl + 1), ['\r\n', '\n'], false, maxBytes, (fields) => {
        rows.push(fields);
      });
    } catch {
      continue;
    }
    if (rows.length === 1 && rows[0]?.length === width) return { fields: rows[0], end: nl + 1 };
  }
  return null;
}

/**
 * True when the header row ends with CRLF (the simulator's and RFC 4180's): its first line break outside
 * quotes (a quoted header cell may hold a line break of its own).
 */
export function usesCrlf(body: Buffer): boolean {
  let quoted = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === QUOTE) quoted = !quoted;
    else if (c === NL && !quoted) return i > 0 && body[i - 1] === CR;
  }
  return true;
}

/** Thrown out of csv-parse to restart parsing after the first line of a ragged multi-line row. */
export class JoinedRows extends Error {
  constructor(cells: number, columns: number, lines: number) {
    super(
      `a row of ${cells} cells over ${lines} lines where the header has ${columns} columns (a broken quote?); ` +
        'its first line is quarantined and reading goes on at the next line',
    );
  }
}

/** First offset at or after `from` that is not a line break (where the next row starts). */
export function skipLineBreaks(body: Buffer, from: number): number {
  let i = from;
  while (i < body.length && (body[i] === NL || body[i] === CR)) i++;
  return i;
}

/** `end` moved back over the row's own line break. */
export function trimEnd(body: Buffer, start: number, end: number): number {
  let e = end;
  if (e > start && body[e - 1] === NL) e--;
  if (e > start && body[e - 1] === CR) e--;
  return e;
}

/** The text of one physical line, cut to `maxBytes` on a character boundary. */
export function rawLine(
  body: Buffer,
  start: number,
  lineEnd: number,
  maxBytes: number,
): { raw: string; rawTruncated?: boolean; rawBytes?: number } {
  const end = trimEnd(body, start, lineEnd + (lineEnd < body.length ? 1 : 0));
  const bytes = end - start;
  if (bytes <= maxBytes) return { raw: body.toString('utf8', start, end) };
  let cut = start + maxBytes;
  while (cut > start && ((body[cut] ?? 0) & 0xc0) === 0x80) cut--;
  return { raw: body.toString('utf8', start, cut), rawTruncated: true, rawBytes: bytes };
}

/** Physical lines of `body` (a final line break does not start a new line). */
export function countLines(body: Buffer): number {
  if (body.length === 0) return 0;
  let n = 1;
  for (let nl = body.indexOf(NL); nl !== -1; nl = body.indexOf(NL, nl + 1)) if (nl < body.length - 1) n++;
  return n;
}
