import { createHash } from 'node:crypto';
import { CsvError } from 'csv-parse/sync';
import { RECORD_ISSUE_CODES } from '../schema/record-issue.js';
import { SyncError } from '../util/errors.js';
import type { ExtraLimits } from '../schema/value-rules.js';
import { loneCrAsLf } from './csv-line-ends.js';
import {
  countLines,
  JoinedRows,
  NL,
  parseRecords,
  rawLine,
  rowEndedByLf,
  skipLineBreaks,
  splitAtBareLf,
  trimEnd,
  usesCrlf,
  type Cells,
} from './csv-row-bounds.js';
import { cellsCloseOnLine, csvCellFromPrefix } from './csv-prefix-id.js';
import { csvRowValue, repeatedColumns, type RepeatedColumns } from './csv-row-value.js';
import { ambiguousNames, canonicalNames } from '../schema/field-names.js';
import type { ExtractedRecord } from './record.js';
import { invalidUtf8Offsets, invalidUtf8Reject } from './utf8.js';
import { csvIdCell } from '../schema/csv-id.js';

// The fields a report cannot be without (schema/report.ts), besides `id`.
const REQUIRED = new Set(['status', 'destination', 'createdAt']);

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
  /** Bounds on a record's unknown fields (extra columns); default {@link DEFAULT_EXTRA_LIMITS}. */
  extraLimits?: ExtraLimits | undefined;
  /**
   * The transport checks where the body ends (`bodyEndChecked` of upstream/http-answers.ts): a last row
   * with an open quote or too few cells is then quarantined like any other. Default false: the body may
   * have been cut there, which is `BODY_TRUNCATED`.
   */
  endChecked?: boolean | undefined;
}

/** One parsed CSV page: its data rows as {@link ExtractedRecord} units, in order, plus what paging needs. */
export interface CsvPage {
  /** Header row (empty for an empty body). */
  columns: string[];
  /** Every data row in body order: a `value` (column → cell text) or a `malformed` row with its reason. */
  records: ExtractedRecord[];
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

/**
 * Parses one page of the CSV export (RFC 4180: header row, quoted fields, CRLF or LF line breaks, or lone
 * CRs when the header ends with one: csv-line-ends.ts) with
 * csv-parse (`bom: true`, `max_record_size`, `relax_column_count`, `skip_empty_lines`; docs/how-a-sync-works.md),
 * and accounts for every line of the body: each is part of a row that parsed, part of a quarantined row,
 * the header, or blank. Text (multi-line quoted fields, CRLF inside them, non-ASCII) is kept as it came.
 *
 * Why the page is held whole: csv-parse's `skip_records_with_error` lets one unclosed quote swallow every
 * later row with a single event (measured, docs/how-a-sync-works.md). Here a parse error stops the parser, the first
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
 * A value record's `raw` and `bytes` read `body` when used: leave it unchanged while the records are in use.
 *
 * @throws SyncError `BODY_TRUNCATED` (retryable) when the body ends without a final line break inside an
 *   open quote or in a row with too few cells: a close-delimited body cut short (unless `endChecked`);
 *   `CSV_HEADER_INVALID` when the header row itself cannot be parsed.
 */
export function parseCsvPage(body: Buffer, options: CsvPageOptions): CsvPage {
  const records: ExtractedRecord[] = [];
  const page = new PageParser(loneCrAsLf(body), options, (r) => records.push(r)).parse();
  return { ...page, records };
}

/**
 * {@link parseCsvPage} handing each row to `onRecord` (with the header) as it is read, in body order, instead of collecting
 * them (a decode worker then holds one row at a time: less for the garbage collector to copy). Returns what
 * paging needs; `rows` counts the rows handed over (quarantined ones included). Same errors, and whatever
 * `onRecord` throws ends the scan with that error.
 */
export function scanCsvPage(
  body: Buffer,
  options: CsvPageOptions,
  onRecord: (record: ExtractedRecord, columns: readonly string[]) => void,
): Omit<CsvPage, 'records'> & { rows: number } {
  return new PageParser(loneCrAsLf(body), options, onRecord).parse();
}

/** The state of one {@link parseCsvPage} call: where parsing is, what was found, the line cursor. */
class PageParser {
  /** The page's row keys, one a line, hashed once at the end (one SHA-1 call a page, not a row). */
  private keys = '';
  /** Line of the last row handed over (for the error of a page cut short). */
  private lastLine: number | undefined;
  private header: string[] | undefined;
  private repeated: RepeatedColumns = [];
  private idColumn = -1;
  /** A required field several columns name in other styles (see {@link ambiguousHeader}). */
  private ambiguous: { field: string; names: string[] } | undefined;
  private parsed = 0;
  private rejected = 0;
  /** Physical lines covered by data rows (parsed or quarantined). */
  private rowLines = 0;
  private row = 0;
  private lastRowRagged = false;
  /** Since the last refused line, no row of the header's width: lines may be a broken row's continuation. */
  private afterRefusal = false;
  private lastRowEnd = 0;
  /** End offset of the last record csv-parse gave (the next row starts after it). */
  private end = 0;
  private cursorOffset = 0;
  private cursorLine = 1;
  /**
   * Rows end with the header's line break. With CRLF a bare LF is data (an unquoted field holding one is
   * not RFC 4180, but common), unless it turns out to end a row (see {@link onCsvRecord}, {@link quarantine}).
   */
  private readonly crlf: boolean;

  constructor(
    private readonly body: Buffer,
    private readonly options: CsvPageOptions,
    private readonly sink: (record: ExtractedRecord, columns: readonly string[]) => void,
  ) {
    this.crlf = usesCrlf(body);
    this.invalid = invalidUtf8Offsets(body);
  }

  /**
   * Offsets of the bytes of the page that are not valid UTF-8 (usually none). A row holding one is
   * quarantined with its bytes; one outside every row refuses the page (see {@link parse}).
   */
  private readonly invalid: number[];
  /** Invalid offsets inside a quarantined row. */
  private readonly covered = new Set<number>();

  /** The first invalid byte in `[start, end)`, marking every one there as quarantined; else undefined. */
  private invalidIn(start: number, end: number): number | undefined {
    let first: number | undefined;
    for (const at of this.invalid) {
      if (at >= end) break;
      if (at < start) continue;
      first ??= at;
      this.covered.add(at);
    }
    return first;
  }

  private invalidHeader(): SyncError {
    const { options } = this;
    return new SyncError(
      'CSV_INVALID_UTF8',
      `The header row of page ${options.page} of ${options.url} is not valid UTF-8 (byte ${this.invalid[0]}): ` +
        'the page is refused rather than read with substituted characters (does the server declare the right charset?)',
      { context: { url: options.url, page: options.page, offset: this.invalid[0] } },
    );
  }

  /**
   * A page with rows under a header that has no `id` column: every row would be quarantined for want of
   * its key, and the run fail on the reject ratio without saying why. Asked at the first row, so a
   * header-only page answering past the end (whatever its text) stays an empty page.
   */
  private headerWithoutId(): SyncError {
    const { options } = this;
    const shown = (this.header ?? []).join(',').slice(0, 200);
    const twice = ambiguousNames(this.header ?? []).find((a) => a.field === 'id');
    if (twice) return this.ambiguousHeader(twice);
    const sep = otherSeparator(this.header ?? []);
    if (sep !== undefined) {
      return new SyncError(
        'CSV_HEADER_INVALID',
        `The header row of page ${options.page} of ${options.url} has no \`id\` column: its names are separated ` +
          `by ${JSON.stringify(sep)} (it reads "${shown}"), and the export is read as comma-separated (RFC 4180): ` +
          'the upstream must serve it with commas (is REPORTS_CSV_PATH a spreadsheet download for another locale?)',
        { context: { url: options.url, page: options.page, header: shown, separator: sep } },
      );
    }
    return new SyncError(
      'CSV_HEADER_INVALID',
      `The header row of page ${options.page} of ${options.url} has no \`id\` column (it reads "${shown}"): ` +
        "every page must begin with the export's header row, naming the key column `id` in any case or " +
        'style, or by the name REPORTS_FIELD_NAMES maps (id=<its column>) (does the server send the header on ' +
        'page 1 only?); check that REPORTS_CSV_PATH points at the reports export',
      { context: { url: options.url, page: options.page, header: shown } },
    );
  }

  /**
   * Several columns naming one required field in other styles (`Status` and `STATUS`, no `status`): none is
   * chosen, so every row would be quarantined for want of the field. Asked at the first row, as for `id`.
   */
  private ambiguousHeader(a: { field: string; names: string[] }): SyncError {
    const { options } = this;
    return new SyncError(
      'CSV_HEADER_INVALID',
      `The header row of page ${options.page} of ${options.url} has no \`${a.field}\` column but ` +
        `${a.names.map((n) => JSON.stringify(n)).join(' and ')}, each naming it in another style: none is ` +
        'chosen (each goes to extra), so no row would have the field; the upstream must name it once',
      { context: { url: options.url, page: options.page, field: a.field, columns: a.names } },
    );
  }

  parse(): Omit<CsvPage, 'records'> & { rows: number } {
    const { body, options } = this;
    let offset = 0;
    while (offset < body.length) {
      const base = offset;
      this.end = base;
      try {
        parseRecords(
          body.subarray(base),
          // A page whose header ends with LF may still end rows with CRLF: never leave the CR in a cell.
          this.crlf ? '\r\n' : ['\r\n', '\n'],
          base === 0,
          this.options.maxRecordBytes,
          (fields, bytes) => this.onCsvRecord(fields, base + bytes),
        );
        offset = body.length;
      } catch (err) {
        if (!(err instanceof CsvError) && !(err instanceof JoinedRows)) throw err;
        offset = this.recover(err);
      }
    }
    const stray = this.invalid.find((at) => !this.covered.has(at));
    if (stray !== undefined) {
      throw new SyncError(
        'CSV_INVALID_UTF8',
        `Page ${options.page} of ${options.url} holds invalid UTF-8 at byte ${stray} outside any row: the page is ` +
          'refused rather than read with substituted characters',
        { context: { url: options.url, page: options.page, offset: stray } },
      );
    }
    const lines = countLines(body);
    if (
      !options.endChecked &&
      this.lastRowRagged &&
      this.lastRowEnd === body.length &&
      body[body.length - 1] !== NL
    ) {
      throw this.truncated(this.lastLine ?? lines);
    }
    return {
      columns: this.header ?? [],
      rows: this.row,
      parsed: this.parsed,
      rejected: this.rejected,
      lines,
      skippedLines: lines - this.rowLines,
      keysDigest: `${this.row}:${createHash('sha1').update(this.keys).digest('hex')}`,
      bytes: body.length,
    };
  }

  /** One record from csv-parse, ending at `recordEnd`: the header, one or more rows, or joined rows (throws). */
  private onCsvRecord(fields: Cells, recordEnd: number): void {
    const start = skipLineBreaks(this.body, this.end);
    const header = this.header;
    if (header === undefined) {
      this.end = recordEnd;
      if (this.invalidIn(0, recordEnd) !== undefined) throw this.invalidHeader();
      this.header = canonicalNames(fields.map((f) => f ?? ''));
      this.repeated = repeatedColumns(this.header);
      this.idColumn = this.header.indexOf('id');
      this.ambiguous = ambiguousNames(this.header).find((a) => REQUIRED.has(a.field));
      return;
    }
    if (this.idColumn === -1) throw this.headerWithoutId();
    if (this.ambiguous !== undefined) throw this.ambiguousHeader(this.ambiguous);
    const split =
      this.crlf && fields.length > header.length
        ? splitAtBareLf(this.body, start, recordEnd, header.length)
        : null;
    const lines = this.spanLines(start, recordEnd);
    if (!split && fields.length !== header.length && lines > 1) {
      // A ragged row over several lines: most likely a broken quote that joined rows. `recover` quarantines
      // its first line only and parsing goes on at the next one, so the rows it took are read again.
      throw new JoinedRows(fields.length, header.length, lines);
    }
    this.end = recordEnd;
    if (split) for (const part of split) this.emitRow(part.fields, part.start, part.end, header);
    else this.emitRow(fields, start, recordEnd, header);
  }

  /**
   * After a parse error at the row starting past `this.end`: a row ended by LF alone is read on its own;
   * otherwise the row's first physical line is quarantined. Returns where parsing starts again.
   *
   * @throws SyncError `BODY_TRUNCATED` for an open quote at the end of an unterminated body,
   *   `CSV_HEADER_INVALID` when the header itself failed
   */
  private recover(err: CsvError | JoinedRows): number {
    const { body, options } = this;
    const start = skipLineBreaks(body, this.end);
    if (start >= body.length) return body.length;
    const nl = body.indexOf(NL, start);
    if (nl === -1 && !options.endChecked && err instanceof CsvError && err.code === 'CSV_QUOTE_NOT_CLOSED') {
      throw this.truncated(this.lineAt(start));
    }
    const header = this.header;
    if (header === undefined) {
      throw new SyncError(
        'CSV_HEADER_INVALID',
        `The header row of page ${options.page} of ${options.url} cannot be parsed (${err.message}): ` +
          'check that REPORTS_CSV_PATH points at a CSV export',
        { context: { url: options.url, page: options.page } },
      );
    }
    if (this.crlf) {
      // A row ended by LF alone right after a closing quote fails in CRLF mode: read it on its own.
      const rescued = rowEndedByLf(body, start, header.length, options.maxRecordBytes);
      if (rescued) {
        this.emitRow(rescued.fields, start, rescued.end, header);
        return rescued.end;
      }
    }
    const lineEnd = nl === -1 ? body.length : nl;
    this.row++;
    this.rowLines++;
    this.rejected++;
    const text = rawLine(body, start, lineEnd, options.rejectRawMaxBytes);
    this.keys += `${text.raw}\n`;
    this.lastLine = this.lineAt(start);
    const location = { page: options.page, row: this.row, line: this.lastLine };
    const lineBytes = body.subarray(start, trimEnd(body, start, lineEnd + (lineEnd < body.length ? 1 : 0)));
    const invalid = this.invalidIn(start, start + lineBytes.length);
    const issue = {
      path: '',
      message: `malformed CSV: ${err.message}`,
      code: RECORD_ISSUE_CODES.malformedCsv,
    };
    // Only a row refused for its size alone, starting where the last good row ended, is known to begin at
    // its id: after a refusal, a line may be the continuation of a broken row's quoted cell.
    const whole = err instanceof CsvError && err.code === 'CSV_MAX_RECORD_SIZE' && !this.afterRefusal;
    // Such a row whose quotes all close on its line ended at its line break: the next line is a row.
    this.afterRefusal = !(whole && cellsCloseOnLine(body.subarray(start, lineEnd)));
    if (invalid === undefined) {
      const rowBytes = body.subarray(start, lineEnd + (lineEnd < body.length ? 1 : 0));
      const recordId = whole ? this.prefixId(rowBytes) : undefined;
      this.emit({ kind: 'malformed', location, ...text, ...(recordId ? { recordId } : {}), issues: [issue] });
    } else {
      const {
        location: _l,
        issues,
        ...reject
      } = invalidUtf8Reject(location, lineBytes, invalid - start, options.rejectRawMaxBytes);
      this.emit({ kind: 'malformed', location, ...reject, issues: [...issues, issue] });
    }
    this.lastRowRagged = false;
    this.lastRowEnd = lineEnd;
    return nl === -1 ? body.length : nl + 1;
  }

  /** Records one data row: a value when it has the header's width, else a quarantined ragged row. */
  private emitRow(fields: Cells, start: number, end: number, columns: string[]): void {
    const { body, options } = this;
    this.row++;
    this.rowLines += this.spanLines(start, end);
    const location = { page: options.page, row: this.row, line: this.lineAt(start) };
    const rawEnd = trimEnd(body, start, end);
    // The row's text is decoded only when read: a valid row is hashed from its bytes (one string less a row).
    const text = () => body.toString('utf8', start, rawEnd);
    const id = fields[this.idColumn];
    this.keys += `${id === undefined ? text() : (id ?? '')}\n`;
    this.lastLine = location.line;
    this.lastRowEnd = end;
    this.lastRowRagged = fields.length !== columns.length;
    if (!this.lastRowRagged) this.afterRefusal = false;
    const invalid = this.invalidIn(start, rawEnd);
    if (invalid !== undefined) {
      this.rejected++;
      const { location: _l, ...reject } = invalidUtf8Reject(
        location,
        body.subarray(start, rawEnd),
        invalid - start,
        options.rejectRawMaxBytes,
        this.readableId(fields, columns),
      );
      this.emit({ kind: 'malformed', location, ...reject });
      return;
    }
    if (this.lastRowRagged) {
      this.rejected++;
      const message = `ragged row: ${fields.length} cells where the header has ${columns.length} columns`;
      this.emit({
        kind: 'malformed',
        location,
        raw: text(),
        issues: [{ path: '', message, code: RECORD_ISSUE_CODES.malformedCsv }],
      });
      return;
    }
    const row = csvRowValue(columns, fields, this.repeated);
    if ('issue' in row) {
      this.rejected++;
      const recordId = this.readableId(fields, columns);
      this.emit({ kind: 'malformed', location, raw: text(), recordId, issues: [row.issue] });
      return;
    }
    const value = row.value;
    this.parsed++;
    const bytes = body.subarray(start, rawEnd);
    this.emit({
      kind: 'value',
      location,
      get raw() {
        return text();
      },
      bytes,
      value,
    });
  }

  /**
   * The id of a quarantined row when it can be read for sure (for `rejected_records.record_id`): the row has
   * the header's width, its id cell is not blank and holds no U+FFFD (which stands for bytes that were not
   * UTF-8), and a repeated `id` column agrees. Else undefined.
   */
  private readableId(fields: Cells, columns: readonly string[]): string | undefined {
    if (fields.length !== columns.length) return undefined;
    const id = fields[this.idColumn];
    if (typeof id !== 'string' || id.trim() === '' || id.includes('\uFFFD')) return undefined;
    const agrees = this.repeated.every((g) => g.name !== 'id' || g.at.every((i) => fields[i] === id));
    // As the row's validation reads it (`17.0` is 17): the quarantined copy protects that report.
    return agrees ? csvIdCell(id) : undefined;
  }

  /**
   * The id of a row csv-parse refused whole, read from the row's first bytes (csv-prefix-id.ts) when the
   * header has one `id` column; as {@link readableId} rules it otherwise.
   */
  private prefixId(row: Uint8Array): string | undefined {
    if (this.repeated.some((g) => g.name === 'id')) return undefined;
    const id = csvCellFromPrefix(row, this.idColumn);
    if (id === undefined || id.trim() === '' || id.includes('\uFFFD')) return undefined;
    return csvIdCell(id);
  }

  private emit(record: ExtractedRecord): void {
    this.sink(record, this.header ?? []);
  }

  /** 1-based physical line of `offset`, counted incrementally (offsets only grow). */
  private lineAt(offset: number): number {
    const { body } = this;
    for (
      let nl = body.indexOf(NL, this.cursorOffset);
      nl !== -1 && nl < offset;
      nl = body.indexOf(NL, nl + 1)
    ) {
      this.cursorLine++;
      this.cursorOffset = nl + 1;
    }
    if (this.cursorOffset < offset) this.cursorOffset = offset;
    return this.cursorLine;
  }

  /** Physical lines of the row `[start, end)` (its own final line break excluded). */
  private spanLines(start: number, end: number): number {
    const { body } = this;
    let n = 1;
    const last = trimEnd(body, start, end);
    for (let nl = body.indexOf(NL, start); nl !== -1 && nl < last; nl = body.indexOf(NL, nl + 1)) n++;
    return n;
  }

  private truncated(line: number): SyncError {
    const { options } = this;
    return new SyncError(
      'BODY_TRUNCATED',
      `Page ${options.page} of ${options.url} ended in the middle of the row at line ${line} (connection closed early)`,
      { context: { url: options.url, page: options.page, line }, retry: 'request' },
    );
  }
}

/**
 * The separator of a header read as one column that names the `id` column once split by it (`;`, as
 * spreadsheets in comma-decimal locales write CSV, a tab, `|`), else undefined.
 */
function otherSeparator(header: readonly string[]): string | undefined {
  if (header.length !== 1) return undefined;
  return [';', '\t', '|'].find((sep) => {
    const names = header[0]!.split(sep);
    return names.length > 1 && canonicalNames(names).includes('id');
  });
}
