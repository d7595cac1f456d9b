/**
 * JSON values kept exactly as sent. `JSON.parse` rounds numbers to doubles (12345678901234567890 becomes
 * 12345678901234567000, 1e400 becomes Infinity and then `null`) and keeps the last of two equal keys
 * without a word; Node 20 has neither `JSON.rawJSON` nor the reviver's source text. So the text of a record
 * is scanned once more, structurally (no values built): each top-level field's value is located in the text,
 * and a key repeated in any object is reported.
 */

/** A JSON value held as its canonical text because a parsed value would not reproduce it (see {@link extraValue}). */
export class JsonText {
  /** @param text canonical JSON text (see {@link canonicalJsonText}) */
  constructor(readonly text: string) {}
}

/** One field of a JSON object: its key and the `[start, end)` offsets of its value in the scanned text. */
export interface JsonField {
  key: string;
  start: number;
  end: number;
}

/** What {@link scanJsonObject} found: the top-level fields in order, and the first repeated key, if any. */
export interface JsonObjectScan {
  fields: JsonField[];
  /** Dotted path of the first key that occurs twice in one object (`a.b`, `a[2].c`), or undefined. */
  duplicate?: { path: string; key: string } | undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

interface Frame {
  object: boolean;
  keys: string[] | Set<string>;
  key: string; // current key (objects) or index (arrays)
  index: number;
}

/**
 * Scans the text of a JSON object that `JSON.parse` already accepted. Linear, no values built: ~0.3 µs
 * for a typical report line. Only top-level fields get offsets; keys are compared in every object, and the
 * scan stops at the first repeated one.
 *
 * @param compareKeys false to compare no keys: every top-level field is listed, a repeated one too (a
 *   wrapper object whose nested values are not ours to judge)
 */
export function scanJsonObject(text: string, compareKeys = true): JsonObjectScan {
  const fields: JsonField[] = [];
  const stack: Frame[] = [];
  let expectKey = false;
  let valueStart = -1;
  let i = 0;
  const n = text.length;
  const endTopValue = (end: number) => {
    if (valueStart >= 0 && stack.length === 1) {
      fields[fields.length - 1]!.end = end;
      valueStart = -1;
    }
  };
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x2c || c === 0x3a) {
      i++;
      continue;
    }
    if (stack.length === 1 && !expectKey && valueStart < 0) valueStart = i;
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (expectKey) {
        const raw = text.slice(i + 1, end - 1);
        const key = raw.includes('\\') ? (JSON.parse(text.slice(i, end)) as string) : raw;
        const top = stack[stack.length - 1]!;
        if (compareKeys && hasKey(top, key)) return { fields, duplicate: { path: pathOf(stack, key), key } };
        top.key = key;
        if (stack.length === 1) fields.push({ key, start: -1, end: -1 });
        expectKey = false;
      } else {
        if (stack.length === 1) fields[fields.length - 1]!.start = valueStart;
        endTopValue(end);
        afterValue(stack);
        expectKey = stack[stack.length - 1]?.object ?? false;
      }
      i = end;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      if (stack.length === 1) fields[fields.length - 1]!.start = valueStart;
      stack.push({ object: c === 0x7b, keys: [], key: '', index: 0 });
      expectKey = c === 0x7b;
      i++;
      continue;
    }
    if (c === 0x7d || c === 0x5d) {
      stack.pop();
      i++;
      endTopValue(i);
      afterValue(stack);
      expectKey = stack[stack.length - 1]?.object ?? false;
      continue;
    }
    // A number or literal: up to the next delimiter.
    let j = i + 1;
    while (j < n && !isDelimiter(text.charCodeAt(j))) j++;
    if (stack.length === 1) fields[fields.length - 1]!.start = valueStart;
    endTopValue(j);
    afterValue(stack);
    expectKey = stack[stack.length - 1]?.object ?? false;
    i = j;
  }
  return { fields };
}

function afterValue(stack: Frame[]): void {
  const top = stack[stack.length - 1];
  if (top && !top.object) top.index++;
}

function hasKey(frame: Frame, key: string): boolean {
  const keys = frame.keys;
  if (Array.isArray(keys)) {
    if (keys.includes(key)) return true;
    keys.push(key);
    // Beyond a few keys a Set: a wide object stays linear.
    if (keys.length > 16) frame.keys = new Set(keys);
    return false;
  }
  if (keys.has(key)) return true;
  keys.add(key);
  return false;
}

function pathOf(stack: Frame[], key: string): string {
  let path = '';
  for (let d = 1; d < stack.length; d++) {
    const parent = stack[d - 1]!;
    path += parent.object ? (path === '' ? parent.key : `.${parent.key}`) : `[${parent.index}]`;
  }
  return path === '' ? key : `${path}.${key}`;
}

function isDelimiter(c: number): boolean {
  return c === 0x2c || c === 0x7d || c === 0x5d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Offset just past the string token starting at `start` (a `"`) of valid JSON text. */
export function stringEnd(text: string, start: number): number {
  let q = text.indexOf('"', start + 1);
  for (;;) {
    let b = q - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q + 1;
    q = text.indexOf('"', q + 1);
  }
}

/**
 * The canonical text of the JSON value `text[start, end)` (valid JSON): white space outside strings dropped,
 * strings written as `JSON.stringify` writes them (`"\u0041"` → `"A"`), numbers and literals kept as sent
 * (`1.0`, `1e400`, `12345678901234567890`). Two texts of the same value sent the same way canonicalise alike.
 */
export function canonicalJsonText(text: string, start = 0, end = text.length): string {
  let out = '';
  let i = start;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      i++;
      continue;
    }
    if (c === QUOTE) {
      const e = stringEnd(text, i);
      const token = text.slice(i, e);
      out += token.includes('\\') ? JSON.stringify(JSON.parse(token)) : token;
      i = e;
      continue;
    }
    let j = i + 1;
    if (c !== 0x7b && c !== 0x7d && c !== 0x5b && c !== 0x5d && c !== 0x2c && c !== 0x3a) {
      while (j < end && !isDelimiter(text.charCodeAt(j)) && text.charCodeAt(j) !== 0x3a) j++;
    }
    out += text.slice(i, j);
    i = j;
  }
  return out;
}

/**
 * The in-memory form of an unknown field's value from its canonical text: the parsed value when
 * `JSON.stringify` gives the same text back (strings, small numbers, plain objects — `__proto__` included,
 * as `JSON.parse` makes it an own key), else a {@link JsonText} (a number that a double would change).
 */
export function extraValue(canonical: string): unknown {
  const value: unknown = JSON.parse(canonical);
  return JSON.stringify(value) === canonical ? value : new JsonText(canonical);
}

/** The JSON text of a value that may be or hold (as a direct property) a {@link JsonText}. */
export function jsonTextOf(value: unknown): string {
  if (value instanceof JsonText) return value.text;
  return JSON.stringify(value) ?? 'null';
}

/**
 * JSON text of an object of unknown fields (null prototype or not), in key order, each value by
 * {@link jsonTextOf}: `{"a":1e400,"__proto__":{}}`.
 */
export function extraObjectJson(extra: Readonly<Record<string, unknown>>): string {
  let out = '{';
  for (const key of Object.keys(extra)) {
    if (out.length > 1) out += ',';
    out += `${JSON.stringify(key)}:${jsonTextOf(extra[key])}`;
  }
  return `${out}}`;
}

/**
 * The unknown fields of a stored JSON object text (the warehouse's `extra` column), exactly: a null-prototype
 * object, key order kept, values by {@link extraValue}.
 *
 * @throws SyntaxError when `text` is not a JSON object
 */
export function extraFromJson(text: string): Record<string, unknown> {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new SyntaxError('extra is not a JSON object');
  }
  const extra = Object.create(null) as Record<string, unknown>;
  // Stored text is canonical: when the parsed object writes it back unchanged, no value needs its text.
  if (JSON.stringify(parsed) === text) {
    for (const key of Object.keys(parsed)) extra[key] = (parsed as Record<string, unknown>)[key];
    return extra;
  }
  for (const f of scanJsonObject(text).fields) {
    extra[f.key] = extraValue(canonicalJsonText(text, f.start, f.end));
  }
  return extra;
}

/**
 * `JSON.stringify` for values that may hold {@link JsonText} at any depth (written as their text); `undefined`
 * and functions are left out of objects and are `null` in arrays, as `JSON.stringify` does.
 */
export function stringifyJson(value: unknown): string {
  if (value instanceof JsonText) return value.text;
  if (Array.isArray(value)) {
    return `[${value.map((v: unknown) => (v === undefined || typeof v === 'function' ? 'null' : stringifyJson(v))).join(',')}]`;
  }
  if (typeof value === 'object' && value !== null) {
    const parts: string[] = [];
    for (const key of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined && typeof v !== 'function')
        parts.push(`${JSON.stringify(key)}:${stringifyJson(v)}`);
    }
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The texts of the elements of the JSON array `text` (valid JSON, already accepted by `JSON.parse`), each
 * sliced as sent so numbers and repeated keys can be judged from the source (see wire-line.ts). Iterative,
 * linear. Returns `undefined` when `text` is not an array.
 */
export function arrayElementTexts(text: string): string[] | undefined {
  let i = 0;
  const n = text.length;
  const skipWs = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09 && c !== 0xfeff) break;
      i++;
    }
  };
  skipWs();
  if (text.charCodeAt(i) !== 0x5b) return undefined;
  i++;
  const elements: string[] = [];
  let depth = 0;
  let start = -1;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      if (start < 0) start = i;
      i = stringEnd(text, i) - 1;
    } else if (c === 0x7b || c === 0x5b) {
      if (start < 0) start = i;
      depth++;
    } else if (c === 0x7d || (c === 0x5d && depth > 0)) {
      depth--;
    } else if ((c === 0x2c || c === 0x5d) && depth === 0) {
      if (start >= 0) elements.push(text.slice(start, i).trimEnd());
      start = -1;
      if (c === 0x5d) break;
    } else if (start < 0 && c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
      start = i;
    }
  }
  return elements;
}

/**
 * The first key given twice in one object anywhere in the JSON text `text` (valid JSON of any kind:
 * `JSON.parse` keeps the last of two equal keys without a word), as its dotted path and the key; undefined
 * when every object's keys are distinct.
 */
export function repeatedJsonKey(text: string): { path: string; key: string } | undefined {
  // scanJsonObject reads an object: any other value is read as the value of one field.
  const scan = scanJsonObject(`{"":${text}}`);
  if (scan.duplicate === undefined) return undefined;
  return { path: scan.duplicate.path.replace(/^\./, ''), key: scan.duplicate.key };
}

/**
 * How deeply the JSON value `text` (valid JSON) nests arrays and objects: 0 for a scalar, 1 for `{}` or
 * `[1]`, 2 for `{"a":[1]}`. One pass, no recursion, so any depth is measured (a walk of the parsed value
 * recursing per level overflows the stack at a few thousand levels).
 */
export function jsonDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      if (end <= i) break; // an unterminated string: not valid JSON, nothing more to measure
      i = end - 1;
    } else if (c === 0x7b || c === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}
