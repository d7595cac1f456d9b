import { isWellFormedText } from '../schema/value-rules.js';
import type { DecodedBlock } from './ndjson-block.js';

/**
 * Where a record came from in an export, for the run log and the quarantine: physical 1-based `line`
 * of the body (NDJSON line, or the CSV record's first line), and for paged exports the 1-based `page`
 * and the 1-based data `row` within the page.
 */
export interface RecordLocation {
  line: number;
  page?: number;
  row?: number;
}

/** Renders a location as people read it: `line 12`, `page 3, row 17, line 40`. */
export function formatLocation(loc: RecordLocation): string {
  const parts: string[] = [];
  if (loc.page !== undefined) parts.push(`page ${loc.page}`);
  if (loc.row !== undefined) parts.push(`row ${loc.row}`);
  parts.push(`line ${loc.line}`);
  return parts.join(', ');
}

/**
 * One record as an extract stage reads it: a parsed value still to validate, or a record that already
 * failed (malformed JSON, CSV quote error, over-long line). `raw` is the record's text as received
 * (possibly cut to a bound, then `rawTruncated` is set and `rawBytes` gives the full size). Records that
 * come one by one are the rare ones (an NDJSON line past the length limit or ending the body unterminated,
 * or a source without a decode stage): they carry no line hash, so the next run parses them again.
 */
export type ExtractedRecord =
  | {
      kind: 'value';
      location: RecordLocation;
      raw: string;
      value: unknown;
      /** Arrival order when the source numbers records itself (NDJSON: the line number). */
      seq?: number | undefined;
    }
  | {
      kind: 'malformed';
      location: RecordLocation;
      raw: string;
      /** `base64`: `raw` holds the record's bytes, which are not valid UTF-8 (extract/utf8.ts). */
      rawEncoding?: 'base64' | undefined;
      rawTruncated?: boolean;
      rawBytes?: number;
      issues: { path: string; message: string }[];
    };

/**
 * Many records decoded together (an NDJSON block or a CSV page), already staged as batch-file lines (see
 * extract/ndjson-block.ts, extract/csv-page-decode.ts).
 */
export interface DecodedRecords {
  kind: 'block';
  block: DecodedBlock;
}

/** One unit coming out of an extract stage, as the runner consumes it. */
export type Extracted = ExtractedRecord | DecodedRecords;

/** The `id` of a parsed record when it has a usable one (for `rejected_records.record_id`), else undefined. */
export function recordIdOf(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const id = (value as Record<string, unknown>).id;
  // A blank id is no id (and CSV cannot tell it from a missing one): NULL in rejected_records.record_id.
  // An id with a lone surrogate has no UTF-8 form: stored rewritten it would name another record (the raw
  // text keeps it, as its JSON escape).
  if (typeof id === 'string') return id.trim() !== '' && isWellFormedText(id) ? id : undefined;
  return typeof id === 'number' ? String(id) : undefined;
}
