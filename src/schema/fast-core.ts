import type { Report } from './wire-format.js';
import {
  isLatitude,
  isLongitude,
  isValidCode,
  isValidId,
  isValidText,
  REPORT_RULES as R,
} from './report-rules.js';
import { normalizeTimestamp } from './timestamp.js';

/** A validated report without its `extra` fields (those are split off before validation). */
export type CoreReport = Omit<Report, 'extra'>;

/**
 * The hot path of report validation (zod's unions and transforms cost ~20 µs per record, this
 * ~1 µs). It accepts only the common shape — string id, string codes, text or null, numeric coordinates
 * (or numeric text) in range or both absent, timestamps {@link normalizeTimestamp} accepts — and returns
 * exactly what the zod `core` schema of report.ts would. For anything else (a numeric id, a wrong type, a
 * rule broken) it returns `undefined` and the caller runs zod, the source of truth, which then accepts or
 * rejects with its issues. So this path can never reject, and never accepts what zod would reject
 * (test/unit/fast-core.test.ts checks both paths agree on a corpus of good and bad records).
 *
 * Arguments are the fields as the zod schema receives them (`lat`/`lng` already read from the location
 * aliases); a field the record lacks is `undefined`.
 */
export function fastCore(
  id: unknown,
  status: unknown,
  destination: unknown,
  category: unknown,
  description: unknown,
  lat: unknown,
  lng: unknown,
  address: unknown,
  createdAt: unknown,
  updatedAt: unknown,
): CoreReport | undefined {
  if (typeof id !== 'string' || !isValidId(id)) return undefined;
  if (!isCode(status) || !isCode(destination)) return undefined;
  const cat = text(category);
  const desc = text(description);
  const addr = text(address);
  if (cat === undefined || desc === undefined || addr === undefined) return undefined;
  const la = coordinate(lat, isLatitude);
  const ln = coordinate(lng, isLongitude);
  if (la === undefined || ln === undefined || (la === null) !== (ln === null)) return undefined;
  if (typeof createdAt !== 'string') return undefined;
  const created = normalizeTimestamp(createdAt);
  if (created === null) return undefined;
  let updated = created;
  if (updatedAt !== undefined && updatedAt !== null) {
    if (typeof updatedAt !== 'string') return undefined;
    const u = normalizeTimestamp(updatedAt);
    if (u === null) return undefined;
    updated = u;
  }
  return {
    id,
    status,
    destination,
    category: cat,
    description: desc,
    lat: la,
    lng: ln,
    address: addr,
    createdAt: created,
    updatedAt: updated,
  };
}

function isCode(value: unknown): value is string {
  return typeof value === 'string' && isValidCode(value);
}

/** zod `text`: `null`/absent → null, a well-formed string up to the limit → itself, else undefined (ask zod). */
function text(value: unknown): string | null | undefined {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' && isValidText(value) ? value : undefined;
}

/** zod `optionalCoordinate`: absent/null/'' → null, a number or numeric text in range → the number. */
function coordinate(value: unknown, inRange: (degrees: number) => boolean): number | null | undefined {
  if (value === undefined || value === null || value === '') return null;
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && R.numericText.test(value)) n = Number(value);
  else return undefined;
  return inRange(n) ? n : undefined;
}
