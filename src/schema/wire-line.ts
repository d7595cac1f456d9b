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
    const renamed = restyledObjectText(text, scanJsonObject(text).fields);
    if (renamed !== undefined) return validateWireLine(renamed, JSON.parse(renamed), limits);
  }
  let numbers = false;
  for (const key in obj) {
    if (!isModelledKey(key) && holdsNumber(obj[key])) {
      numbers = true;
      break;
    }
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
