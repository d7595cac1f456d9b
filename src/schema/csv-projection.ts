import { jsonTextOf } from './json-text.js';
import { contentHash, type Report } from './wire-format.js';

/**
 * What any CSV writer keeps of a report: the report with every difference a CSV cell cannot express, or a
 * writer may spell either way, taken out (docs/guarantees.md, "History"). Two readings of one upstream
 * report — its NDJSON line, a list item, a CSV row whoever wrote it — have the same projection, and a
 * change a CSV row can show changes it. The rule, per value:
 *
 * - `null`, a missing field, `""`, an unquoted empty cell and a quoted one are all **no value**: a CSV cell
 *   cannot tell them apart (PostgreSQL's `COPY … CSV` tells `""` from NULL; Python's `csv` writes both as an
 *   empty cell, and `QUOTE_ALL` both as `""`). This holds for `category`, `description`, `address` too.
 * - a **number** is its value as a double, however it is spelled (`1`, `1.0`, `1e0`, `1E+0`, `-0` is `0`;
 *   `12345678901234567890` is the double a writer parsing it holds): writers print numbers differently
 *   (`json.dumps(1.0)` is `1.0`, `JSON.stringify(1.0)` is `1`). Text that is a JSON number is read as one,
 *   since a cell cannot say whether `5` was a number or the text "5".
 * - `true`/`True`/`TRUE` and `false`/`False`/`FALSE` are the **booleans** (Python's `csv` writes `True`).
 * - an **object or array** (or text holding one) is its JSON value: keys in code-unit order, no white space,
 *   numbers as above (`{"b": 1.0, "a": [1]}` is `{"a":[1],"b":1}`); JSON keeps `""` and `null` apart inside.
 * - other text is itself, its line breaks as LF (a writer on Windows turns LF into CRLF inside a cell).
 *
 * Unknown fields are kept in code-unit key order (a CSV row's fields come in the export's column order).
 * The known fields are already canonical in a {@link Report} (numbers, UTC timestamps, string ids).
 * The price of the rule: a change *within* one of these classes (`""` → `null`, `1` → `1.0`, the text "5"
 * → the number 5) is no new version when it is seen through CSV only; an NDJSON run sees it.
 */
export function csvProjection(report: Report): Report {
  if (isOwnProjection(report)) return report;
  let extra: Record<string, unknown> | null = null;
  if (report.extra !== null) {
    for (const key of Object.keys(report.extra).sort()) {
      const text = projectedValue(report.extra[key]);
      if (text === undefined) continue;
      extra ??= Object.create(null) as Record<string, unknown>;
      extra[key] = text;
    }
  }
  return {
    ...report,
    category: projectedText(report.category),
    description: projectedText(report.description),
    address: projectedText(report.address),
    extra,
  };
}

/**
 * The content hash of {@link csvProjection}: equal for every reading of the same upstream report, through
 * CSV (whoever wrote it) or JSON, so the merge can tell a representation difference from a change.
 *
 * @param hash the report's own content hash, returned when the projection is the report itself
 */
export function csvProjectionHash(report: Report, hash: string): string {
  const projected = csvProjection(report);
  return projected === report ? hash : contentHash(projected);
}

/**
 * One value's projection as text (see {@link csvProjection}), or undefined for no value: a number as its
 * double prints (`1`), a boolean as `true`/`false`, an object or array as its canonical JSON, other text as
 * itself (CRLF as LF). No two classes share a text (text that reads as a number, a boolean or JSON is one),
 * so text already in its class's form — `"42"`, `"true"` — is its own projection. Accepts what a
 * {@link Report}'s `extra` holds: cell text, a JSON value as `JSON.parse` gives it, a {@link JsonText}.
 */
export function projectedValue(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return projectedCell(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return numberText(value);
  // A JsonText (a number a double would change, or a value holding one) or an object or array.
  const text = jsonTextOf(value);
  if (NUMBER.test(text)) return numberText(Number(text), text);
  return containerText(text) ?? text;
}

/** {@link projectedValue} of a CSV cell's text (or of a JSON string: a writer writes it as it is). */
export function projectedCell(cell: string): string | undefined {
  if (cell === '') return undefined;
  const c = cell.charCodeAt(0);
  if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
    if (NUMBER.test(cell)) return numberText(Number(cell), cell);
  } else if (c === 0x7b || c === 0x5b) {
    const json = containerText(cell);
    if (json !== undefined) return json;
  } else {
    const flag = BOOLEAN.get(cell);
    if (flag !== undefined) return flag;
  }
  return lf(cell);
}

/** A known text field's projection: `""` is no value, line breaks LF. */
function projectedText(text: string | null): string | null {
  return text === null || text === '' ? null : lf(text);
}

const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?$/;
const BOOLEAN = new Map([
  ['true', 'true'],
  ['True', 'true'],
  ['TRUE', 'true'],
  ['false', 'false'],
  ['False', 'false'],
  ['FALSE', 'false'],
]);
// Deeper JSON in a cell is compared as it is written (the extra-field limits keep stored values far
// shallower; a recursion over an unbounded one would overflow the stack).
const MAX_DEPTH = 64;

function lf(text: string): string {
  return text.includes('\r\n') ? text.replace(/\r\n/g, '\n') : text;
}

/** A number's text as a double would print it; past a double's range, its exact text (`1e400`). */
function numberText(n: number, text?: string): string {
  return Number.isFinite(n) ? String(n) : (text ?? String(n));
}

/** The canonical JSON of an object or array text (see {@link csvProjection}), or undefined when it is not one. */
function containerText(text: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  return canonical(value, 0);
}

function canonical(value: unknown, depth: number): string | undefined {
  if (typeof value === 'number') return numberText(value);
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (depth >= MAX_DEPTH) return undefined;
  const parts: string[] = [];
  if (Array.isArray(value)) {
    for (const item of value) {
      const json = canonical(item, depth + 1);
      if (json === undefined) return undefined;
      parts.push(json);
    }
    return `[${parts.join(',')}]`;
  }
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object).sort()) {
    const json = canonical(object[key], depth + 1);
    if (json === undefined) return undefined;
    parts.push(`${JSON.stringify(key)}:${json}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * Whether a report is already its own projection: known text fields neither `""` nor holding CRLF, every
 * unknown field text that projects to itself, keys in code-unit order. Then the projection is the report
 * and so is its hash (most reports: a second serialisation and SHA-1 saved per record).
 */
function isOwnProjection(report: Report): boolean {
  if (!ownText(report.category) || !ownText(report.description) || !ownText(report.address)) return false;
  const extra = report.extra;
  if (extra === null) return true;
  let previous: string | undefined;
  for (const key of Object.keys(extra)) {
    const value = extra[key];
    if (typeof value !== 'string' || !projectsToItself(value)) return false;
    if (previous !== undefined && !(previous < key)) return false;
    previous = key;
  }
  return true;
}

function ownText(text: string | null): boolean {
  return text === null || (text !== '' && !text.includes('\r\n'));
}

/** Whether text is its own projection: not empty, and already in its class's form (see {@link projectedValue}). */
export function projectsToItself(cell: string): boolean {
  return projectedCell(cell) === cell;
}
