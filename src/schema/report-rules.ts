/**
 * The limits and patterns of a valid report (docs/sources.md), in one place so the zod schema of report.ts
 * (the source of truth) and its hot path (fast-core.ts) cannot drift apart. Lengths are in UTF-16 code
 * units, as zod's `.max()` counts them.
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
  /** A coordinate given as text (CSV cells, string values in NDJSON). */
  numericText: /^\s*-?\d+(\.\d+)?([eE][-+]?\d+)?\s*$/,
  /** Latitude bound in degrees (WGS84). */
  maxLatitude: 90,
  /** Longitude bound in degrees (WGS84). */
  maxLongitude: 180,
} as const;
