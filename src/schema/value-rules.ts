import { extraObjectJson, JsonText } from './json-text.js';
import { RECORD_ISSUE_CODES, type RecordIssue } from './record-issue.js';

/**
 * Bounds on a record's unknown fields (`extra`), from `REPORTS_EXTRA_MAX_DEPTH`, `REPORTS_EXTRA_MAX_KEYS`
 * and `REPORTS_EXTRA_MAX_BYTES` (config/settings.ts). A record past one is quarantined: an unbounded value
 * would overflow the stack of every recursive step after parsing (`JSON.stringify` fails near depth 5,000
 * on the main thread, measured) and fail the whole run.
 */
export interface ExtraLimits {
  /** Deepest nesting of objects/arrays inside one unknown field (a scalar field has depth 0). */
  maxDepth: number;
  /** Object keys plus array items, counted over every unknown field and everything nested in them. */
  maxKeys: number;
  /** UTF-8 bytes of the unknown fields serialised as one JSON object. */
  maxBytes: number;
}

/** The defaults of {@link ExtraLimits} (the settings' defaults). */
export const DEFAULT_EXTRA_LIMITS: ExtraLimits = { maxDepth: 64, maxKeys: 1000, maxBytes: 65_536 };

/**
 * True when `text` is well-formed UTF-16 (no lone surrogate): exactly the strings that have a UTF-8 form.
 * A DuckDB VARCHAR must be valid UTF-8, and a lone surrogate (a JSON escape such as `\ud800`) could only be
 * stored rewritten (U+FFFD), which merged distinct ids: such text is quarantined instead.
 */
export function isWellFormedText(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** The issue of a string holding a lone surrogate at `path`. */
export function loneSurrogateIssue(path: string): RecordIssue {
  return {
    path,
    message: 'holds a lone UTF-16 surrogate (e.g. the JSON escape \\ud800): not representable as UTF-8 text',
    code: RECORD_ISSUE_CODES.invalidText,
  };
}

/**
 * Checks a record's unknown fields against `limits` and the warehouse's text rule (every key and string
 * well-formed, see {@link isWellFormedText}) without recursion: an explicit stack, so a value nested
 * 100,000 deep is refused, never overflows. Returns the first issue found, or `undefined` when the fields
 * may be stored. Cost: one pass over the value; the exact byte size is computed (one `JSON.stringify`,
 * safe once the depth is bounded) only when a cheap upper bound passes `maxBytes`.
 */
export function checkExtra(extra: Record<string, unknown>, limits: ExtraLimits): RecordIssue | undefined {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [];
  let keys = 0;
  let bound = 2; // upper bound of the UTF-8 size of the serialised object
  for (const key of Object.keys(extra)) {
    if (!isWellFormedText(key)) return loneSurrogateIssue(`extra key ${JSON.stringify(key)}`);
    keys++;
    bound += key.length * 6 + 4;
    stack.push({ value: extra[key], depth: 0, path: key });
  }
  while (stack.length > 0) {
    const { value, depth, path } = stack.pop()!;
    if (typeof value === 'string') {
      if (!isWellFormedText(value)) return loneSurrogateIssue(path);
      bound += value.length * 6 + 3;
      continue;
    }
    if (value instanceof JsonText) {
      bound += value.text.length * 3; // canonical text: escaped, at most 3 UTF-8 bytes a code unit
      continue;
    }
    if (typeof value !== 'object' || value === null) {
      bound += 25; // the longest number, `false`, `null`
      continue;
    }
    if (depth + 1 > limits.maxDepth) {
      return {
        path,
        message: `nested deeper than ${limits.maxDepth} levels (REPORTS_EXTRA_MAX_DEPTH)`,
        code: RECORD_ISSUE_CODES.extraTooLarge,
      };
    }
    bound += 2;
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.keys(value).map((k) => [k, (value as Record<string, unknown>)[k]] as const);
    for (const [k, v] of entries) {
      if (!Array.isArray(value) && !isWellFormedText(k)) return loneSurrogateIssue(`${path} key`);
      bound += k.length * 6 + 4;
      stack.push({ value: v, depth: depth + 1, path: `${path}.${k}` });
    }
    keys += entries.length;
    if (keys > limits.maxKeys) {
      return {
        path,
        message: `more than ${limits.maxKeys} keys and items (REPORTS_EXTRA_MAX_KEYS)`,
        code: RECORD_ISSUE_CODES.extraTooLarge,
      };
    }
  }
  if (keys > limits.maxKeys) {
    return {
      path: '',
      message: `more than ${limits.maxKeys} unknown fields (REPORTS_EXTRA_MAX_KEYS)`,
      code: RECORD_ISSUE_CODES.extraTooLarge,
    };
  }
  if (bound > limits.maxBytes) return sizeIssue(extraObjectJson(extra), limits.maxBytes);
  return undefined;
}

/**
 * The issue of unknown fields whose JSON text (`json`, as stored) is over `maxBytes` UTF-8 bytes, or
 * `undefined` within it. Fields holding numbers are stored as sent (`1.000…0` is not `1`): their size is
 * the text's, not their parsed values'.
 */
export function sizeIssue(json: string, maxBytes: number): RecordIssue | undefined {
  const bytes = Buffer.byteLength(json);
  if (bytes <= maxBytes) return undefined;
  return {
    path: '',
    message: `unknown fields of ${bytes} bytes exceed ${maxBytes} bytes (REPORTS_EXTRA_MAX_BYTES)`,
    code: RECORD_ISSUE_CODES.extraTooLarge,
  };
}
