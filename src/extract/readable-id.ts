import { isUtf8 } from 'node:buffer';
import { canonicalNames, isRestyledName } from '../schema/field-names.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The `id` of a JSON object line that cannot be loaded as a whole — bytes that are not UTF-8, malformed
 * JSON, a line cut to its kept prefix — when the id itself can still be read for sure, for
 * `rejected_records.record_id` (so an analyst can tell which report was held back). Reads the bytes: the
 * object's top-level keys in order up to the first thing that is not JSON; the value of the key the
 * validator reads the id from must be a complete string (valid UTF-8, not blank) or number token. That key
 * is `id`, else the one key naming it in another style or by `REPORTS_FIELD_NAMES` (`ID`,
 * `service_request_id`: schema/field-names.ts `canonicalNames`, over the keys read). Undefined when there
 * is none, when the object gives `id` twice, or when the id's own bytes are broken.
 *
 * Rules as `recordIdOf` of normalize/reject.ts: a number is its JSON text read as a number (`String(n)`),
 * but an integer past 2^53 − 1 is its digits as sent (read as a number it would be another integer).
 */
export function readableJsonId(bytes: Uint8Array): string | undefined {
  const scan = { b: bytes, i: 0 };
  skipSpace(scan);
  if (bytes[scan.i] !== 0x7b) return undefined;
  scan.i++;
  const fields = topLevelFields(scan);
  const exact = fields.filter((f) => f.key === 'id');
  if (exact.length > 1) return undefined; // given twice: which one is meant cannot be told
  if (exact.length === 1) return exact[0]!.token && idValue(exact[0]!.token);
  const keys = fields.map((f) => f.key ?? '');
  if (!keys.some(isRestyledName)) return undefined;
  const names = canonicalNames(keys);
  const at = names.indexOf('id');
  if (names.lastIndexOf('id') !== at) return undefined; // one restyled key given twice (`ID`, `ID`)
  const token = at < 0 ? undefined : fields[at]!.token;
  return token && idValue(token);
}

/**
 * The top-level fields of an object whose `{` is behind `scan`, up to the first thing that is not JSON:
 * each key (undefined when its bytes are not UTF-8) with its value's token, undefined for a value that
 * does not end in the bytes (a field read no further).
 */
function topLevelFields(scan: { b: Uint8Array; i: number }): { key?: string; token?: Uint8Array }[] {
  const bytes = scan.b;
  const fields: { key?: string; token?: Uint8Array }[] = [];
  for (;;) {
    skipSpace(scan);
    if (bytes[scan.i] !== QUOTE) return fields;
    const keyEnd = stringEnd(bytes, scan.i);
    if (keyEnd < 0) return fields;
    const key = stringValue(bytes.subarray(scan.i, keyEnd));
    scan.i = keyEnd;
    skipSpace(scan);
    if (bytes[scan.i] !== 0x3a) return fields;
    scan.i++;
    skipSpace(scan);
    const start = scan.i;
    if (!skipValue(scan)) {
      fields.push({ key });
      return fields;
    }
    fields.push({ key, token: bytes.subarray(start, scan.i) });
    skipSpace(scan);
    if (bytes[scan.i] !== 0x2c) return fields;
    scan.i++;
  }
}

function idValue(token: Uint8Array): string | undefined {
  if (!isUtf8(token)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token.buffer, token.byteOffset, token.byteLength).toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value === 'number') {
    // Past 2^53 − 1 the parsed integer is another one: its digits as sent (a zero fraction aside), when
    // they are plain digits.
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
      const digits = Buffer.from(token.buffer, token.byteOffset, token.byteLength).toString('latin1');
      return /^(-?(?:0|[1-9][0-9]*))(?:\.0+)?$/.exec(digits)?.[1];
    }
    return Number.isFinite(value) ? String(value) : undefined;
  }
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  return (value as unknown as { isWellFormed(): boolean }).isWellFormed() ? value : undefined;
}

function stringValue(token: Uint8Array): string | undefined {
  if (!isUtf8(token)) return undefined;
  try {
    return JSON.parse(
      Buffer.from(token.buffer, token.byteOffset, token.byteLength).toString('utf8'),
    ) as string;
  } catch {
    return undefined;
  }
}

function skipSpace(s: { b: Uint8Array; i: number }): void {
  while (s.i < s.b.length) {
    const c = s.b[s.i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
    s.i++;
  }
}

/** Offset past the string token starting at `start` (a quote), or -1 when it does not end in `b`. */
function stringEnd(b: Uint8Array, start: number): number {
  for (let i = start + 1; i < b.length; i++) {
    if (b[i] === BACKSLASH) i++;
    else if (b[i] === QUOTE) return i + 1;
  }
  return -1;
}

/** Moves past one JSON value (any bytes inside strings); false when it does not end in the bytes. */
function skipValue(s: { b: Uint8Array; i: number }): boolean {
  const { b } = s;
  let depth = 0;
  do {
    const c = b[s.i];
    if (c === undefined) return false;
    if (c === QUOTE) {
      const end = stringEnd(b, s.i);
      if (end < 0) return false;
      s.i = end;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      s.i++;
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return false;
      depth--;
      s.i++;
    } else if (depth > 0) {
      s.i++;
    } else {
      const start = s.i;
      while (s.i < b.length && !isDelimiter(b[s.i]!)) s.i++;
      if (s.i === start || s.i === b.length) return false;
    }
  } while (depth > 0);
  return true;
}

function isDelimiter(c: number): boolean {
  return c === 0x2c || c === 0x7d || c === 0x5d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
