import { isWellFormedText } from './value-rules.js';
/**
 * The limits and patterns of a valid report (docs/sources.md), in one place so the zod schema of report.ts
 * (the source of truth) and its hot path (fast-core.ts) cannot drift apart. Lengths are in characters
 * (Unicode code points: `😀` is one, though two UTF-16 units), as zod's `.max()` counts them and as
 * DuckDB's `length()` does.
 */
export const REPORT_RULES = {
  /** Longest `id` string. */
  idMaxLength: 256,
  /** Longest `status` / `destination` code. */
  codeMaxLength: 128,
  /** Longest free text (`category`, `description`, `address`). */
  textMaxLength: 1_000_000,
  /** An id or code must hold at least one non-white-space character. */
  nonBlank: /\S/,
  /**
   * A `status` / `destination` code: at least one non-white-space character and no control character
   * (C0, DEL, C1). Spaces, lower case and punctuation are legal (`IN PROGRESS`): the lists are open. The
   * reader's filters (schema/public-query.ts) accept exactly this set, so every stored code can be asked for.
   */
  // eslint-disable-next-line no-control-regex -- control characters are exactly what the rule refuses
  code: /^(?=[^]*\S)[^\u0000-\u001f\u007f-\u009f]+$/,
  /**
   * A coordinate given as text (CSV cells, string values in NDJSON): a decimal, maybe signed, with an
   * exponent; `-.1276` and `51.` too (Oracle's `TO_CHAR` drops the leading zero, printf's `%#g` keeps a dot).
   */
  numericText: /^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/,
  /** Latitude bound in degrees (WGS84). */
  maxLatitude: 90,
  /** Longitude bound in degrees (WGS84). */
  maxLongitude: 180,
} as const;

/*
 * The rules as named predicates, called by both fast paths (schema/fast-core.ts for parsed records,
 * normalize/canonical-line.ts for lines in canonical form). The zod schema of report.ts checks the same
 * REPORT_RULES one by one so that each broken rule gets its own issue; test/property/report-rules.test.ts
 * proves each predicate accepts exactly what the zod field accepts.
 */

/**
 * True when `text` has at most `max` characters (code points). Only a string longer than `max` UTF-16
 * units is counted: a code point is one or two of them.
 */
export function isWithinLength(text: string, max: number): boolean {
  if (text.length <= max) return true;
  if (text.length > 2 * max) return false;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    if (++count > max) return false;
  }
  return true;
}

/** An `id` string: non-blank, at most `idMaxLength` characters, well-formed (no lone surrogate). */
export function isValidId(id: string): boolean {
  return (
    isWithinLength(id, REPORT_RULES.idMaxLength) && REPORT_RULES.nonBlank.test(id) && isWellFormedText(id)
  );
}

/** A `status` / `destination` code: at most `codeMaxLength` characters, {@link REPORT_RULES}.code, well-formed. */
export function isValidCode(code: string): boolean {
  return (
    isWithinLength(code, REPORT_RULES.codeMaxLength) && REPORT_RULES.code.test(code) && isWellFormedText(code)
  );
}

/** A free text (`category`, `description`, `address`): at most `textMaxLength` characters, well-formed. */
export function isValidText(text: string): boolean {
  return isWithinLength(text, REPORT_RULES.textMaxLength) && isWellFormedText(text);
}

/** A latitude in degrees: within ±`maxLatitude` (NaN is not). */
export function isLatitude(degrees: number): boolean {
  return degrees >= -REPORT_RULES.maxLatitude && degrees <= REPORT_RULES.maxLatitude;
}

/** A longitude in degrees: within ±`maxLongitude` (NaN is not). */
export function isLongitude(degrees: number): boolean {
  return degrees >= -REPORT_RULES.maxLongitude && degrees <= REPORT_RULES.maxLongitude;
}
