import type { RecordIssue } from '../schema/record-issue.js';

/**
 * Where a record came from in an export, for the run log and the quarantine: physical 1-based `line`
 * of the body (NDJSON line, or the CSV record's first line), and for paged exports the 1-based `page`
 * and the 1-based data `row` within the page.
 */
export interface RecordLocation {
  line: number;
  page?: number;
  row?: number;
  /** An element of a JSON list page: it is where `page` and `row` say, and `line` repeats the row. */
  element?: boolean;
}

/** Renders a location as people read it: `line 12`, `page 3, row 17, line 40`, `page 2, row 5` (a list element). */
export function formatLocation(loc: RecordLocation): string {
  const line = `line ${loc.line}`;
  if (loc.page === undefined && loc.row === undefined) return line; // NDJSON: once per staged line
  const parts: string[] = [];
  if (loc.page !== undefined) parts.push(`page ${loc.page}`);
  if (loc.row !== undefined) parts.push(`row ${loc.row}`);
  if (loc.element !== true) parts.push(line);
  return parts.join(', ');
}

/**
 * One record as an extract stage reads it: a parsed value still to validate, or a record that already
 * failed (malformed JSON, CSV quote error, over-long line). `raw` is the record's text as received
 * (possibly cut to a bound, then `rawTruncated` is set and `rawBytes` gives the full size). No validation
 * happens here: the normalize stage decodes values into reports or rejects.
 */
export type ExtractedRecord =
  | {
      kind: 'value';
      location: RecordLocation;
      raw: string;
      /**
       * `raw` as its UTF-8 bytes, when the source has them (CSV rows: a view on the page body, valid UTF-8):
       * hashing them skips encoding `raw` again.
       */
      bytes?: Uint8Array | undefined;
      value: unknown;
      /** Arrival order when the source numbers records itself (NDJSON: the line number). */
      seq?: number | undefined;
    }
  | ({ kind: 'malformed' } & UnreadableRecord);

/**
 * A record the extract stage could not read as a value (malformed JSON or CSV, invalid UTF-8, an over-long
 * line): what the quarantine keeps of it (the normalize stage's `Reject` has this shape).
 */
export interface UnreadableRecord {
  location: RecordLocation;
  raw: string;
  /** `base64`: `raw` holds the record's bytes, which are not valid UTF-8 (extract/utf8.ts). */
  rawEncoding?: 'base64' | undefined;
  rawTruncated?: boolean | undefined;
  /** Size of the full raw record in bytes (when `raw` was cut). */
  rawBytes?: number | undefined;
  recordId?: string | undefined;
  issues: RecordIssue[];
}
