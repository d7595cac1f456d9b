/**
 * Why a record was quarantined, one problem of it: where in the record (`path`, dotted: `lat`,
 * `location.lat`; empty for the record as a whole), what is wrong as people read it (`message`, which may
 * quote the value), and the kind of problem (`code`) that stays the same for every record with that problem,
 * so rejects can be grouped by `path` and `code` whatever their messages quote (warehouse/reject-reasons.ts).
 * Stored as JSON in `rejected_records.issues`, in this key order.
 *
 * `code` is zod's issue code for what the schema finds (`invalid_type`, `too_big`, `too_small`,
 * `invalid_format`, `invalid_union`, `custom`, …) and one of {@link RECORD_ISSUE_CODES} for what is found
 * before or beside it.
 */
export interface RecordIssue {
  path: string;
  message: string;
  code: string;
}

/** The issue codes of problems found outside the zod schema (docs/how-a-sync-works.md, quarantine). */
export const RECORD_ISSUE_CODES = {
  /** A line that is not JSON. */
  malformedJson: 'malformed_json',
  /** A CSV record that does not parse (a quote left open, a stray quote, a ragged row). */
  malformedCsv: 'malformed_csv',
  /** Bytes that are not UTF-8 (the raw text is kept as base64). */
  invalidUtf8: 'invalid_utf8',
  /** A record longer than `REPORTS_MAX_RECORD_BYTES`. */
  recordTooLarge: 'record_too_large',
  /** Unknown fields beyond the `REPORTS_EXTRA_MAX_*` bounds. */
  extraTooLarge: 'extra_too_large',
  /** A key or column given twice with different values, or a location alias naming another value. */
  conflictingValues: 'conflicting_values',
  /** Text with a lone UTF-16 surrogate: no UTF-8 form to store it in. */
  invalidText: 'invalid_text',
  /** A row the warehouse itself refused to stage (reason in the message). */
  warehouseRefused: 'warehouse_refused',
  /** A timestamp that is not ISO 8601 with an offset (a zod refinement's code). */
  invalidTimestamp: 'invalid_timestamp',
  /** `lat` without `lng` or the other way round (a zod refinement's code). */
  incompleteLocation: 'incomplete_location',
  /** A value that is not of the type the field takes (zod's own code). */
  invalidType: 'invalid_type',
  /** A field a report cannot be without that the record does not carry at all (no key, no column). */
  missingField: 'missing_field',
} as const;
