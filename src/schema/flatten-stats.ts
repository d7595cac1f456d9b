import { isWellFormedText } from './value-rules.js';

/** One numeric leaf of a stats body: its path and value. Stored in `stats_values`. */
export interface StatsValue {
  /**
   * Object keys (and array indices) from the root, joined by `.`: `total`, `byStatus.SUBMITTED`, `series.0.n`.
   * A key that is empty or holds `.`, `[`, `]` or `"`, and a root key `$`, is written as its JSON string in
   * brackets (`byStatus["IN.PROGRESS"]`, `[""]`, `["$"]`), so two leaves never share a path (`{"a.b":1,"a":{"b":2}}` gives
   * `["a.b"]` and `a.b`).
   */
  metric: string;
  value: number;
}

/**
 * The numeric leaves of any JSON value, depth first in key order (docs/sources.md: store whatever comes).
 * Strings, booleans and nulls are no metrics and are skipped (they stay in the snapshot's JSON body); a
 * bare number at the root is the metric `$`. Pure; never throws for JSON input.
 *
 * @example
 * flattenStats({ total: 3, byStatus: { SUBMITTED: 2, RESOLVED: 1 }, note: 'x' })
 * // → [{metric: 'total', value: 3}, {metric: 'byStatus.SUBMITTED', value: 2}, {metric: 'byStatus.RESOLVED', value: 1}]
 */
export function flattenStats(body: unknown): StatsValue[] {
  const out: StatsValue[] = [];
  const walk = (value: unknown, path: string) => {
    if (typeof value === 'number') {
      if (Number.isFinite(value)) out.push({ metric: path === '' ? '$' : path, value });
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value);
    for (const [key, child] of entries) walk(child, pathOf(path, key));
  };
  walk(body, '');
  return out;
}

function pathOf(parent: string, key: string): string {
  // A root key `$` in brackets: bare, it would be the name of a number at the root.
  if (!BARE_KEY.test(key) || (parent === '' && key === '$')) return `${parent}[${JSON.stringify(key)}]`;
  return parent === '' ? key : `${parent}.${key}`;
}

const BARE_KEY = /^[^.[\]"]+$/;

/**
 * Where a parsed JSON value (nested at most a few dozen levels: the caller bounds the depth) holds a key or
 * string with a lone UTF-16 surrogate (`"\ud800"`), as a metric name ({@link StatsValue.metric}; `$` for the
 * root; the key at fault written as its JSON escapes), or undefined when it holds none. Such text has no UTF-8 form, so no warehouse column can store it.
 */
export function loneSurrogatePath(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return isWellFormedText(value) ? undefined : path || '$';
  if (value === null || typeof value !== 'object') return undefined;
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [key, child] of entries) {
    // The key itself is named by its JSON escapes (`["\\ud800"]`): its text could be stored nowhere either.
    if (!isWellFormedText(key)) return `${path}[${JSON.stringify(key)}]`;
    const found = loneSurrogatePath(child, pathOf(path, key));
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * The total of published reports in a stats body, at `path` (`REPORTS_STATS_TOTAL_PATH`, default `total`; the
 * seed names no counter: docs/sources.md), when it is a count: a non-negative integer, or its digits as
 * text (`"6405"`). Anything else (`45.5`, `-1`, other text) is no total: compared with the warehouse's count,
 * it would be rounded in print and misread as complete or short, and tombstones hang on that comparison.
 *
 * @param path a metric's name as `stats_values` writes it ({@link StatsValue.metric}): dotted keys into
 *   nested objects (`data.total`), array indices (`0.service_requests`), a key holding a dot in brackets
 *   (`["reports.total"]`)
 */
export function statsTotal(body: unknown, path = 'total'): number | undefined {
  let value: unknown = body;
  for (const key of metricKeys(path) ?? []) {
    if (Array.isArray(value)) value = /^(0|[1-9]\d*)$/.test(key) ? value[Number(key)] : undefined;
    else if (typeof value === 'object' && value !== null) {
      value = Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
    } else return undefined;
  }
  const total = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value;
  return typeof total === 'number' && Number.isSafeInteger(total) && total >= 0 ? total : undefined;
}

/**
 * The keys of a metric name ({@link StatsValue.metric}, as {@link flattenStats} writes it), root first:
 * `a.b` → [a, b], `byStatus["IN.PROGRESS"]` → [byStatus, IN.PROGRESS], `$` → []; undefined when the text
 * is no such name.
 */
export function metricKeys(name: string): string[] | undefined {
  if (name === '$') return [];
  const keys: string[] = [];
  let at = 0;
  while (at < name.length) {
    if (name[at] === '[') {
      const m = /^\[("(?:[^"\\]|\\.)*")\]/.exec(name.slice(at));
      if (m === null) return undefined;
      keys.push(JSON.parse(m[1]!) as string);
      at += m[0].length;
    } else {
      const m = /^[^.[\]"]+/.exec(name.slice(at));
      if (m === null) return undefined;
      keys.push(m[0]);
      at += m[0].length;
    }
    if (at < name.length && name[at] === '.') {
      at++;
      if (at === name.length || name[at] === '[') return undefined;
    } else if (at < name.length && name[at] !== '[') return undefined;
  }
  return keys.length > 0 ? keys : undefined;
}
