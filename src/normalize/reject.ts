import { readableJsonId } from '../extract/readable-id.js';
import type { UnreadableRecord } from '../extract/record.js';
import { isWellFormedText } from '../schema/value-rules.js';
import { canonicalNames } from '../schema/field-names.js';
import type { EncodedLines } from '../util/line-file.js';

/**
 * A record that failed parsing or validation, as stored in `rejected_records` (the quarantine): where it
 * was, its raw text (or bytes in base64), its size when cut, its id when usable, and the issues. The same
 * shape as what the extract stage could not read at all ({@link UnreadableRecord}).
 */
export type Reject = UnreadableRecord;

/**
 * Records decoded together (an NDJSON block or a CSV page), the one form in which records travel from the
 * normalize stage to staging: batch-file lines of valid reports (`rows`, see staged-line.ts) and of known
 * lines (`seen`), the block's rejects, and its counts (records: blank lines are not records). Invariant:
 * `read === loaded + rejected`.
 */
export interface DecodedBlock {
  rows: EncodedLines;
  seen: EncodedLines;
  rejects: Reject[];
  read: number;
  loaded: number;
  rejected: number;
}

/**
 * The `id` of a parsed record when it has a usable one (for `rejected_records.record_id`), else undefined: a
 * non-blank well-formed string, or a number as its text. An integer past 2^53 − 1 parsed to another
 * integer (`9007199254740993` reads as `…992`, another report's id): its digits are read from the line's
 * `text` when given (extract/readable-id.ts), else it has no usable id. The id is read under the key the
 * validator reads it from: `id`, or a key naming it in another style (`ID`, `Id`: schema/field-names.ts).
 */
export function recordIdOf(value: unknown, text?: string): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const id = (value as Record<string, unknown>)[idKeyOf(value as Record<string, unknown>)];
  // A blank id is no id (and CSV cannot tell it from a missing one): NULL in rejected_records.record_id.
  // An id with a lone surrogate has no UTF-8 form: stored rewritten it would name another record (the raw
  // text keeps it, as its JSON escape).
  if (typeof id === 'string') return id.trim() !== '' && isWellFormedText(id) ? id : undefined;
  if (typeof id !== 'number') return undefined;
  if (Number.isInteger(id) && !Number.isSafeInteger(id)) {
    return text === undefined ? undefined : readableJsonId(Buffer.from(text, 'utf8'));
  }
  return String(id);
}

/** The key a record's id is under: `id`, else the one key {@link canonicalNames} renames to it. */
function idKeyOf(value: Record<string, unknown>): string {
  if (Object.hasOwn(value, 'id')) return 'id';
  const keys = Object.keys(value);
  const at = canonicalNames(keys).indexOf('id');
  return at < 0 ? 'id' : keys[at]!;
}
