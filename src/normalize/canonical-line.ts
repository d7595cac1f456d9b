import { hash } from 'node:crypto';
import { projectedCell } from '../schema/csv-projection.js';
import { isRestyledName } from '../schema/field-names.js';
import { isModelledKey } from '../schema/wire-format.js';
import {
  isLatitude,
  isLongitude,
  isValidCode,
  isValidId,
  REPORT_RULES as R,
} from '../schema/report-rules.js';
import { normalizeTimestamp } from '../schema/timestamp.js';
import type { ExtraLimits } from '../schema/value-rules.js';

/** What a line in canonical form stages as: the parts of its batch-file line (staged-line.ts). */
export interface CanonicalLine {
  /** Content hash: hex SHA-1 of the line itself, which is the report's canonical JSON. */
  hash: string;
  /** Content hash of the report's CSV projection (schema/csv-projection.ts). */
  csvHash: string;
  /** The unknown fields as one JSON object's text, or null when there are none. */
  extraJson: string | null;
}

// A string exactly as `JSON.stringify` writes it: `"`, `\` and the control characters escaped (the five
// short escapes, `\u00xx` in lower case for the rest), everything else raw. A lone surrogate would be
// escaped too, but raw text that passed the UTF-8 check holds none and no other escape is canonical.
const S = String.raw`"(?:[^"\\\u0000-\u001f]|\\["\\bfnrt]|\\u00(?:0[0-7bef]|1[0-9a-f]))*"`;
// A JSON number (its canonical form is checked after the match: `String(Number(text)) === text`).
const N = String.raw`-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?`;
const T = String.raw`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"`;
const LINE = new RegExp(
  String.raw`^\{"id":(${S}),"status":(${S}),"destination":(${S}),"category":(?:${S}|null),` +
    String.raw`"description":(?:${S}|null),"location":(?:\{"lat":(${N}),"lng":(${N})\}|null),` +
    String.raw`"address":(?:${S}|null),"createdAt":(${T}),"updatedAt":(${T})((?:,${S}:(?:${S}|${N}|null|true|false))*)\}$`,
);
const EXTRA_FIELD = new RegExp(String.raw`,(${S}):(${S}|${N}|null|true|false)`, 'y');
// Longer lines take the general path (see canonicalLine).
const MAX_LINE_LENGTH = 16_384;
// A key `Object.keys` would move to the front (an array index): its canonical position differs.
const INDEX_LIKE = /^(?:0|[1-9]\d*)$/;

/**
 * The fast lane of NDJSON decoding: a line already in canonical form — exactly `canonicalJson` of the
 * report it validates to (schema/wire-format.ts: known fields in wire order with `location` as `{lat, lng}`
 * or null, canonical UTC timestamps, numbers and strings as `JSON.stringify` writes them, no white space),
 * unknown fields scalar, none of them a modelled key, an array index or repeated — is staged without
 * parsing into objects or serialising again: its content hash is the SHA-1 of the line, and its unknown
 * fields are a slice of it. Machine-written exports are mostly in this form.
 *
 * It only ever declines: `undefined` for any line it does not vouch for (any other form, a rule broken, a
 * limit reached), which then takes the general path (parse, validate, canonicalise), the source of truth
 * for accepting, rejecting and wording issues. For a line it accepts, the result is what the general path
 * stages (test/unit/canonical-line.test.ts compares both over generated lines). Lines over 16 KiB (UTF-16
 * code units) are declined: rare, and a backtracking match over them costs stack.
 *
 * @param text the line, valid UTF-8 decoded, without its line break
 * @param bytes the same line as received (what is hashed: no second encoding). The caller must have checked
 *   they are valid UTF-8 (`decodeBlock` does, before this): nothing here looks at them again.
 * @param limits bounds of the unknown fields (schema/value-rules.ts); only the key count and byte size can
 *   apply to scalar fields
 */
export function canonicalLine(
  text: string,
  bytes: Uint8Array,
  limits: ExtraLimits,
): CanonicalLine | undefined {
  // Within the text limit as a whole, the line holds no text past it.
  if (text.length > Math.min(MAX_LINE_LENGTH, R.textMaxLength)) return undefined;
  const m = LINE.exec(text);
  if (m === null) return undefined;
  const [, id, status, destination, lat, lng, created, updated, tail] = m;
  if (!isValidId(decode(id!)) || !isValidCode(decode(status!)) || !isValidCode(decode(destination!)))
    return undefined;
  if (lat !== undefined && !(isCoordinate(lat, isLatitude) && isCoordinate(lng!, isLongitude)))
    return undefined;
  if (!isTimestamp(created!) || !isTimestamp(updated!)) return undefined;
  const contentHash = hash('sha1', bytes, 'hex');
  if (tail === '') {
    return {
      hash: contentHash,
      csvHash: csvProjectionHashOfLine(text.slice(0, -1), [], contentHash),
      extraJson: null,
    };
  }
  const fields = extraFields(tail!, limits);
  if (fields === undefined) return undefined;
  const extraJson = `{${tail!.slice(1)}}`;
  if (Buffer.byteLength(extraJson) > limits.maxBytes) return undefined;
  const known = text.slice(0, text.length - tail!.length - 1);
  return { hash: contentHash, csvHash: csvProjectionHashOfLine(known, fields, contentHash), extraJson };
}

interface ExtraField {
  key: string;
  keyText: string;
  valueText: string;
}

/**
 * The unknown fields of `tail` (`,"k":v…`), or undefined when one is repeated, modelled (also in another
 * style, `Lat`: the general path reads it as `lat`), index-like or too many.
 */
function extraFields(tail: string, limits: ExtraLimits): ExtraField[] | undefined {
  const fields: ExtraField[] = [];
  const keys = new Set<string>();
  EXTRA_FIELD.lastIndex = 0;
  for (let m = EXTRA_FIELD.exec(tail); m !== null; m = EXTRA_FIELD.exec(tail)) {
    const key = decode(m[1]!);
    if (isModelledKey(key) || isRestyledName(key) || INDEX_LIKE.test(key) || keys.has(key)) return undefined;
    const valueText = m[2]!;
    if (isNumberText(valueText) && String(Number(valueText)) !== valueText) return undefined;
    keys.add(key);
    fields.push({ key, keyText: m[1]!, valueText });
  }
  return fields.length > limits.maxKeys ? undefined : fields;
}

/**
 * The content hash of the CSV projection (schema/csv-projection.ts), built from the line's parts: the known
 * fields as they are (or with `""` text as null and CRLF as LF, read again when the line may hold such
 * text), then each unknown field's projection, keys in code-unit order. A line whose text fields and
 * unknown fields all project to themselves, in that order, is its own projection: its hash is the line's.
 */
function csvProjectionHashOfLine(known: string, fields: ExtraField[], lineHash: string): string {
  // `""` in the known text is an empty string (or an escaped quote ending one: read again, to be sure).
  const knownOwn = !known.includes('""') && !known.includes('\\r\\n');
  let own = knownOwn;
  const literals: Array<string | undefined> = [];
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    const literal = projectedLiteral(f.valueText);
    literals.push(literal);
    own &&= literal === f.valueText && (i === 0 || fields[i - 1]!.key < f.key);
  }
  if (own) return lineHash;
  let projected = knownOwn ? known : projectedKnown(known);
  const order = fields.map((_, i) => i).sort((a, b) => (fields[a]!.key < fields[b]!.key ? -1 : 1));
  for (const i of order) {
    const literal = literals[i];
    if (literal !== undefined) projected += `,${fields[i]!.keyText}:${literal}`;
  }
  return hash('sha1', `${projected}}`, 'hex');
}

/**
 * The projection of a canonical scalar as a JSON string literal (`projectedCell`), or undefined for no
 * value: a string already in its class's form is its own literal (no second serialisation); a number
 * (canonical already) and a boolean are their text, quoted.
 */
function projectedLiteral(valueText: string): string | undefined {
  if (valueText === 'null') return undefined;
  if (valueText.charCodeAt(0) !== 0x22) return `"${valueText}"`;
  const text = decode(valueText);
  const projected = projectedCell(text);
  if (projected === text) return valueText;
  return projected === undefined ? undefined : JSON.stringify(projected);
}

/** The known fields' text (a line's prefix, up to `updatedAt`) with `""` text fields as null, CRLF as LF. */
function projectedKnown(known: string): string {
  const wire = JSON.parse(`${known}}`) as Record<string, unknown>;
  for (const key of ['category', 'description', 'address']) {
    const text = wire[key];
    if (typeof text === 'string') wire[key] = text === '' ? null : text.replace(/\r\n/g, '\n');
  }
  return JSON.stringify(wire).slice(0, -1);
}

/** The value of a canonical JSON string literal (a slice when it holds no escape). */
function decode(literal: string): string {
  return literal.includes('\\') ? (JSON.parse(literal) as string) : literal.slice(1, -1);
}

/** A coordinate's number text in its canonical form (what `String(n)` writes), in range. */
function isCoordinate(text: string, inRange: (degrees: number) => boolean): boolean {
  const n = Number(text);
  return (SHORT_DECIMAL.test(text) || String(n) === text) && inRange(n);
}

// A decimal that is its double's shortest text (`String(n)`), found without formatting the double: at most
// 15 digits (a decimal of 15 significant digits survives the round trip, so no other text of at most as
// many digits names the same double), no trailing zero, at least 1e-6 (smaller ones print with an
// exponent), not `-0`. Up to three integer digits: a coordinate's.
const SHORT_DECIMAL =
  /^-?(?=[\d.]{1,16}$)(?:[1-9]\d{0,2}(?:\.(?=\d*[1-9]$)\d{1,15})?|0\.(?!0{6})(?=\d*[1-9]$)\d{1,15})$/;

function isTimestamp(literal: string): boolean {
  const t = literal.slice(1, -1);
  return normalizeTimestamp(t) === t;
}

function isNumberText(valueText: string): boolean {
  const c = valueText.charCodeAt(0);
  return c === 0x2d || (c >= 0x30 && c <= 0x39);
}
