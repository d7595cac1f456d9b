import { createHash } from 'node:crypto';
import { CsvError, parse } from 'csv-parse/sync';
import { SyncError } from '../util/errors.js';
import type { Extracted } from './record.js';

/** Bounds and names for {@link parseCsvPage}. */
export interface CsvPageOptions {
  /** 1-based page number, for record locations. */
  page: number;
  /** Longest record csv-parse accepts (`max_record_size`, characters ≈ bytes); a longer one is quarantined. */
  maxRecordBytes: number;
  /** Raw text kept for a quarantined line (bytes). */
  rejectRawMaxBytes: number;
  /** The page's URL without secrets, for error messages. */
  url: string;
}

/** One parsed CSV page: its data rows as {@link Extracted} units, in order, plus what paging needs. */
export interface CsvPage {
  /** Header row (empty for an empty body). */
  columns: string[];
  /** Every data row in body order: a `value` (column → cell text) or a `malformed` row with its reason. */
  records: Extracted[];
  /** Rows parsed into a value (`records` with kind `value`). */
  parsed: number;
  /** Rows quarantined at the CSV level: ragged rows, broken quotes, over-long records. */
  rejected: number;
  /** Physical lines of the body (a final line break does not start a new line). */
  lines: number;
  /** Lines holding no record: blank lines, plus the header line(s). */
  skippedLines: number;
  /** SHA-1 of the page's row keys (`id` cells, or the raw line of a row without one), in order. */
  keysDigest: string;
  /** Body size in bytes. */
  bytes: number;
}

const NL = 0x0a;
const CR = 0x0d;

/**
 * Parses one page of the CSV export (RFC 4180: header row, quoted fields, CRLF or LF line breaks) with
 * csv-parse (`bom: true`, `max_record_size`, `relax_column_count`, `skip_empty_lines`; DESIGN.md §4),
 * and accounts for every line of the body: each is part of a row that parsed, part of a quarantined row,
 * the header, or blank. Text (multi-line quoted fields, CRLF inside them, non-ASCII) is kept as it came.
 *
 * Why the page is held whole: csv-parse's `skip_records_with_error` lets one unclosed quote swallow every
 * later row with a single event (measured, DESIGN.md §4). Here a parse error stops the parser, the first
 * physical line of the broken row is quarantined with its page, row and line, and parsing starts again on
 * the next line with the same header, so no later row is lost silently. A ragged row (more or fewer cells
 * than the header) is quarantined too, never loaded with shifted columns; one spanning several lines is
 * taken for rows joined by a broken quote, so only its first line is quarantined and the next lines are
 * read again.
 *
 * Line breaks: rows end with the header's line break (CRLF, or LF). In a CRLF page a bare LF is data (some
 * writers leave a field holding one unquoted), unless the row then has too many cells and splitting it at
 * the bare LFs gives rows of exactly the header's width, or the row fails to parse and reads as one row
 * of that width up to a bare LF: a row ended by LF alone.
 *
 * Line numbers are computed from byte offsets, not taken from csv-parse's `info.lines` (which counts a CRLF
 * inside a quoted field as two lines, measured with csv-parse 6.2).
 *
 * @throws SyncError `BODY_TRUNCATED` (retryable) when the body ends without a final line break inside an
 *   open quote or in a row with too few cells: a close-delimited body cut short;
 *   `CSV_HEADER_INVALID` when the header row itself cannot be parsed.
 */
export function parseCsvPage(body: Buffer, options: CsvPageOptions): CsvPage {
  const records: Extracted[] = [];
  const keys = createHash('sha1');
  let header: string[] | undefined;
  let idColumn = -1;
  let parsed = 0;
  let rejected = 0;
  let rowLines = 0;
  let row = 0;
  let lastRowRagged = false;
  let lastRowEnd = 0;
  // Line cursor: `lineAt(offset)` counts line breaks incrementally (offsets only grow).
  let cursorOffset = 0;
  let cursorLine = 1;
  const lineAt = (offset: number): number => {
    for (let nl = body.indexOf(NL, cursorOffset); nl !== -1 && nl < offset; nl = body.indexOf(NL, nl + 1)) {
      cursorLine++;
      cursorOffset = nl + 1;
    }
    if (cursorOffset < offset) cursorOffset = offset;
    return cursorLine;
  };
  const spanLines = (start: number, end: number): number => {
    let n = 1;
    const last = trimEnd(body, start, end);
    for (let nl = body.indexOf(NL, start); nl !== -1 && nl < last; nl = body.indexOf(NL, nl + 1)) n++;
    return n;
  };
  // Rows end with the header's line break. With CRLF, a bare LF is data (an unquoted field holding it is
  // not RFC 4180, but common) unless the row then has too many cells and splitting it at bare LFs gives
  // whole rows: a row ended by LF alone among CRLF rows.
  const crlf = usesCrlf(body);
  const delimiter = crlf ? '\r\n' : '\n';

  const emitRow = (fields: string[], start: number, end: number, columns: string[]) => {
    row++;
    rowLines += spanLines(start, end);
    const location = { page: options.page, row, line: lineAt(start) };
    const raw = body.toString('utf8', start, trimEnd(body, start, end));
    keys.update(`${fields[idColumn] ?? raw}\n`);
    lastRowEnd = end;
    lastRowRagged = fields.length !== columns.length;
    if (lastRowRagged) {
      rejected++;
      const message = `ragged row: ${fields.length} cells where the header has ${columns.length} columns`;
      records.push({ kind: 'malformed', location, raw, issues: [{ path: '', message }] });
      return;
    }
    const value: Record<string, string> = {};
    for (let i = 0; i < columns.length; i++) value[columns[i] as string] = fields[i] as string;
    parsed++;
    records.push({ kind: 'value', location, raw, value });
  };

  let offset = 0;
  while (offset < body.length) {
    const base = offset;
    let end = base;
    try {
      parseRecords(body.subarray(base), delimiter, base === 0, options.maxRecordBytes, (fields, bytes) => {
        const start = skipLineBreaks(body, end);
        const recordEnd = base + bytes;
        if (header === undefined) {
          end = recordEnd;
          header = fields;
          idColumn = fields.indexOf('id');
          return;
        }
        const split =
          crlf && fields.length > header.length ? splitAtBareLf(body, start, recordEnd, header.length) : null;
        if (!split && fields.length !== header.length && spanLines(start, recordEnd) > 1) {
          // A ragged row over several lines: most likely a broken quote that joined rows. Quarantine its
          // first line only (below, from `end`) and go on at the next one, so the rows it took are read again.
          throw new JoinedRows(fields.length, header.length, spanLines(start, recordEnd));
        }
        end = recordEnd;
        if (split) for (const part of split) emitRow(part.fields, part.start, part.end, header);
        else emitRow(fields, start, recordEnd, header);
      });
      offset = body.length;
    } catch (err) {
      if (!(err instanceof CsvError) && !(err instanceof JoinedRows)) throw err;
      const start = skipLineBreaks(body, end);
      if (start >= body.length) break;
      const nl = body.indexOf(NL, start);
      if (nl === -1 && err instanceof CsvError && err.code === 'CSV_QUOTE_NOT_CLOSED') {
        throw truncated(options, lineAt(start));
      }
      if (header === undefined) {
        throw new SyncError(
          'CSV_HEADER_INVALID',
          `The header row of page ${options.page} of ${options.url} cannot be parsed (${err.message}): ` +
            'check that REPORTS_CSV_PATH points at a CSV export',
          { context: { url: options.url, page: options.page } },
        );
      }
      if (crlf) {
        // A row ended by LF alone right after a closing quote fails in CRLF mode: read it on its own.
        const rescued = rowEndedByLf(body, start, header.length, options.maxRecordBytes);
        if (rescued) {
          emitRow(rescued.fields, start, rescued.end, header);
          offset = rescued.end;
          continue;
        }
      }
      const lineEnd = nl === -1 ? body.length : nl;
      row++;
      rowLines++;
      rejected++;
      const text = rawLine(body, start, lineEnd, options.rejectRawMaxBytes);
      keys.update(`${text.raw}\n`);
      records.push({
        kind: 'malformed',
        location: { page: options.page, row, line: lineAt(start) },
        ...text,
        issues: [{ path: '', message: `malformed CSV: ${err.message}` }],
      });
      lastRowRagged = false;
      lastRowEnd = lineEnd;
      offset = nl === -1 ? body.length : nl + 1;
    }
  }
  const lines = countLines(body);
  if (lastRowRagged && lastRowEnd === body.length && body[body.length - 1] !== NL) {
    const last = records[records.length - 1];
    throw truncated(options, last?.location.line ?? lines);
  }
  return {
    columns: header ?? [],
    records,
    parsed,
    rejected,
    lines,
    skippedLines: lines - rowLines,
    keysDigest: `${row}:${keys.digest('hex')}`,
    bytes: body.length,
  };
}

/**
 * Runs csv-parse over `input`, calling `onRecord` with each record's cells and the offset just past it
 * (`info.bytes`, BOM included). Throws csv-parse's `CsvError` at the first malformed record.
 */
function parseRecords(
  input: Buffer,
  delimiter: string | string[],
  bom: boolean,
  maxRecordBytes: number,
  onRecord: (fields: string[], bytes: number) => void,
): void {
  parse(input, {
    bom,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: maxRecordBytes,
    record_delimiter: delimiter,
    on_record: (fields: string[], info: { bytes: number }) => {
      onRecord(fields, info.bytes);
      return null;
    },
  });
}

/**
 * A row with too many cells that holds bare LFs, split at them: the rows with their offsets when every
 * part has exactly `width` cells, else `null` (then the row stays one ragged row).
 */
function splitAtBareLf(
  body: Buffer,
  start: number,
  end: number,
  width: number,
): Array<{ fields: string[]; start: number; end: number }> | null {
  const parts: Array<{ fields: string[]; start: number; end: number }> = [];
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
function rowEndedByLf(
  body: Buffer,
  start: number,
  width: number,
  maxBytes: number,
): { fields: string[]; end: number } | null {
  for (let nl = body.indexOf(NL, start); nl !== -1 && nl - start <= maxBytes; nl = body.indexOf(NL, nl + 1)) {
    if (body[nl - 1] === CR) continue;
    const rows: string[][] = [];
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

/** True when the first line break of the body is CRLF (the simulator's and RFC 4180's). */
function usesCrlf(body: Buffer): boolean {
  const nl = body.indexOf(NL);
  return nl === -1 || (nl > 0 && body[nl - 1] === CR);
}

/** Thrown out of csv-parse to restart parsing after the first line of a ragged multi-line row. */
class JoinedRows extends Error {
  constructor(cells: number, columns: number, lines: number) {
    super(
      `a row of ${cells} cells over ${lines} lines where the header has ${columns} columns (a broken quote?); ` +
        'its first line is quarantined and reading goes on at the next line',
    );
  }
}

function truncated(options: CsvPageOptions, line: number): SyncError {
  return new SyncError(
    'BODY_TRUNCATED',
    `Page ${options.page} of ${options.url} ended in the middle of the row at line ${line} (connection closed early)`,
    { context: { url: options.url, page: options.page, line }, retryable: true },
  );
}

/** First offset at or after `from` that is not a line break (where the next row starts). */
function skipLineBreaks(body: Buffer, from: number): number {
  let i = from;
  while (i < body.length && (body[i] === NL || body[i] === CR)) i++;
  return i;
}

/** `end` moved back over the row's own line break. */
function trimEnd(body: Buffer, start: number, end: number): number {
  let e = end;
  if (e > start && body[e - 1] === NL) e--;
  if (e > start && body[e - 1] === CR) e--;
  return e;
}

/** The text of one physical line, cut to `maxBytes` on a character boundary. */
function rawLine(
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

function countLines(body: Buffer): number {
  if (body.length === 0) return 0;
  let n = 1;
  for (let nl = body.indexOf(NL); nl !== -1; nl = body.indexOf(NL, nl + 1)) if (nl < body.length - 1) n++;
  return n;
}
