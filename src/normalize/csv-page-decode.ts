import { validateCsvReport, type CsvRow } from '../schema/report.js';
import { csvIdCell } from '../schema/csv-id.js';
import { canonicalJson, contentHash } from '../schema/wire-format.js';
import { scanCsvPage, type CsvPage, type CsvPageOptions } from '../extract/csv.js';
import type { ExtractedRecord } from '../extract/record.js';
import { SyncError } from '../util/errors.js';
import { LineBuffer } from '../util/line-file.js';
import type { KnownLines } from './known-lines.js';
import { recordIdOf, type DecodedBlock, type Reject } from './reject.js';
import { seenLine, stagedRowLine } from './staged-line.js';

/**
 * Records of a paged source (CSV pages, `recent` list pages) are numbered `page × PAGE_SEQ_STRIDE + row`:
 * arrival order, so the merge's "last seen wins" holds whichever thread decoded which page.
 */
export const PAGE_SEQ_STRIDE = 2 ** 29;

/** Rows a page may hold: a record's `seq` is `page × 2^29 + row` (see {@link csvSeq}). */
export const CSV_MAX_PAGE_ROWS = PAGE_SEQ_STRIDE - 1;

/**
 * One CSV page decoded: what paging needs to know of it (`CsvPage` without its records; `rows` is the
 * number of data rows, quarantined ones included) and its records staged as batch-file lines.
 */
export interface DecodedCsvPage {
  page: Omit<CsvPage, 'records'> & { rows: number };
  block: DecodedBlock;
}

/**
 * Arrival order of the CSV record at data row `row` (1-based) of page `page` (1-based): pages in order, rows
 * in order within a page, so the merge's "last seen wins" holds whichever thread decoded which page. Below
 * 2^53 (a JS integer) for every page `REPORTS_CSV_MAX_PAGES` allows (≤ 10^7).
 */
export function csvSeq(page: number, row: number): number {
  return page * PAGE_SEQ_STRIDE + row;
}

/**
 * Parses one CSV page (`scanCsvPage` of csv.ts: the rules of `parseCsvPage`, a row at a time) and decodes
 * each row as it is read, a row the CSV parser
 * quarantined → reject; a row whose raw text `known` holds (under the page's header, see
 * `KnownLines.setContext`) → a known line; else validated (`validateCsvReport`: invalid → reject with the
 * zod issues) and staged with its canonical JSON, content hash and line hash. Pure apart from `known`'s
 * context: runs in a decode worker or inline (parsing and decoding a CSV row costs about twice an NDJSON
 * line, csv-parse being half of it, which bounded the CSV sync on the main thread). Raw text kept per quarantined row:
 * `options.rejectRawMaxBytes`.
 *
 * @throws SyncError `BODY_TRUNCATED`, `CSV_HEADER_INVALID` as `parseCsvPage`;
 *   `CSV_PAGE_TOO_LARGE` for a page of more than {@link CSV_MAX_PAGE_ROWS} rows
 */
export function decodeCsvPage(body: Uint8Array, options: CsvPageOptions, known: KnownLines): DecodedCsvPage {
  const buffer = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const rows = new LineBuffer();
  const seen = new LineBuffer();
  const rejects: Reject[] = [];
  let loaded = 0;
  let context: string | undefined;
  const decode = (record: ExtractedRecord, columns: readonly string[]): void => {
    const row = record.location.row ?? 0;
    if (row > CSV_MAX_PAGE_ROWS) {
      throw new SyncError(
        'CSV_PAGE_TOO_LARGE',
        `Page ${options.page} of ${options.url} holds more than ${CSV_MAX_PAGE_ROWS} rows: lower REPORTS_CSV_PAGE_SIZE`,
        { context: { url: options.url, page: options.page } },
      );
    }
    const seq = csvSeq(options.page, row);
    if (record.kind === 'malformed') {
      const { kind: _kind, ...reject } = record;
      rejects.push(reject);
      return;
    }
    if (context === undefined) {
      context = columns.join('\u0000');
      known.setContext(context);
    }
    const check = known.check(record.bytes ?? record.raw);
    if (check.known) {
      loaded++;
      seen.write(seenLine(seq, check.hash));
      return;
    }
    const result = validateCsvReport(record.value as CsvRow, options.extraLimits);
    if (!result.ok) {
      rejects.push({
        location: record.location,
        raw: record.raw,
        recordId: recordIdOf({ ...(record.value as CsvRow), id: csvIdCell((record.value as CsvRow).id) }),
        issues: result.issues,
      });
      return;
    }
    loaded++;
    const json = canonicalJson(result.report);
    const hash = contentHash(result.report, json);
    rows.write(stagedRowLine(seq, record.location, result.report, json, hash, check.hash));
  };
  const page = scanCsvPage(buffer, options, decode);
  return {
    page,
    block: {
      rows: rows.take(),
      seen: seen.take(),
      rejects,
      read: page.rows,
      loaded,
      rejected: rejects.length,
    },
  };
}
