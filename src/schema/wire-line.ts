import { countParsedKeys, countTextKeys, holdsNumber } from './json-key-count.js';
import { scanJsonObject } from './json-text.js';
import { RECORD_ISSUE_CODES } from './record-issue.js';
import { validateWireReport, type ValidationResult } from './report.js';
import { isModelledKey } from './wire-format.js';
import { DEFAULT_EXTRA_LIMITS, type ExtraLimits } from './value-rules.js';
import { isRestyledName, restyledObjectText } from './field-names.js';

/**
 * Validates one parsed NDJSON line against its text. A key that occurs twice in any object (top level or
 * nested in an unknown field) quarantines the record: `JSON.parse` would keep the last value without a word,
 * and the upstream's intent is unknown. An unknown field holding a number is read from the text, so it keeps
 * the number as sent (`1e400`, `12345678901234567890`, `1.0`). Then {@link validateWireReport}. Never throws.
 *
 * Cost: the repeated-key check compares key counts (text vs parsed, ~15 % of the parse); the structural scan
 * runs only for a line whose counts differ or whose unknown fields hold numbers.
 *
 * @param text the line as received (already accepted by `JSON.parse`)
 * @param value `JSON.parse(text)`
 * @param limits bounds of the unknown fields (depth, keys, bytes)
 */
export function validateWireLine(
  text: string,
  value: unknown,
  limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
): ValidationResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return validateWireReport(value, limits);
  const obj = value as Record<string, unknown>;
  if (Object.keys(obj).some(isRestyledName)) {
    const renamed = restyledObjectText(text, scanJsonObject(text));
    if (renamed !== undefined) return validateWireLine(renamed, JSON.parse(renamed), limits);
  }
  const exactId = exactIntegerId(text, obj);
  if (exactId !== undefined) return validateWireLine(text, { ...obj, id: exactId }, limits);
  let numbers = locationKeepsNumber(obj.location);
  for (const key in obj) {
    if (numbers) break;
    if (!isModelledKey(key) && holdsNumber(obj[key])) numbers = true;
  }
  const repeated = countTextKeys(text) !== countParsedKeys(value);
  if (!repeated && !numbers) return validateWireReport(value, limits);
  const scan = scanJsonObject(text);
  if (scan.duplicate) {
    const { path, key } = scan.duplicate;
    return {
      ok: false,
      issues: [
        {
          path,
          message: `duplicate key ${JSON.stringify(key)}: the object gives it twice`,
          code: RECORD_ISSUE_CODES.conflictingValues,
        },
      ],
    };
  }
  return validateWireReport(value, limits, { text, fields: scan.fields });
}

/**
 * The digits of an `id` sent as an integer past ±(2^53 − 1) (64-bit keys: `12345678901234567890`), which
 * `JSON.parse` turned into another integer: the id is its text, as a CSV export's cell of the same id is
 * (with a zero fraction, `…890.0`, its digits, as a CSV cell `…890.0` reads: schema/csv-id.ts). Undefined
 * for any other id, and for such a number not written as plain digits (`1.5e20`).
 */
function exactIntegerId(text: string, obj: Record<string, unknown>): string | undefined {
  const id = obj.id;
  if (typeof id !== 'number' || !Number.isInteger(id) || Number.isSafeInteger(id)) return undefined;
  const field = scanJsonObject(text).fields.find((f) => f.key === 'id');
  const digits = field === undefined ? undefined : text.slice(field.start, field.end);
  return digits === undefined ? undefined : /^(-?[1-9][0-9]*)(?:\.0+)?$/.exec(digits)?.[1];
}

// Keys of `location` read as its coordinates; any other key is kept in `extra` (schema/location.ts).
const COORDINATE_KEYS = new Set(['lat', 'latitude', 'lng', 'lon', 'long', 'longitude']);

/**
 * Whether a `location` object holds a number under a key kept in `extra` as `location.<key>` (an
 * `accuracy` of `1.50`): such numbers, too, are read from the text, or they would be stored rewritten.
 */
function locationKeepsNumber(location: unknown): boolean {
  if (typeof location !== 'object' || location === null || Array.isArray(location)) return false;
  const l = location as Record<string, unknown>;
  for (const key in l) {
    // A Point's [lng, lat] is read as the coordinates; with an altitude it is kept in `extra` too.
    const pair = Array.isArray(l[key]) && (l[key] as unknown[]).length === 2;
    if (COORDINATE_KEYS.has(key) || (key === 'coordinates' && l.type === 'Point' && pair)) continue;
    if (holdsNumber(l[key])) return true;
  }
  return false;
}
