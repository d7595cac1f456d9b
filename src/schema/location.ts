// The location of a wire record and its aliases (docs/sources.md), read so that nothing of it is dropped unseen.

import { RECORD_ISSUE_CODES, type RecordIssue } from './record-issue.js';
import { canonicalJsonText, extraValue, scanJsonObject, type JsonField } from './json-text.js';
import { holdsNumber } from './json-key-count.js';

/** What {@link readLocation} found: the coordinates (as given) and the keys it kept, or the issue. */
export type LocationRead =
  { lat: unknown; lng: unknown; leftover: Record<string, unknown> | null } | { issue: RecordIssue };

const LAT_KEYS = ['lat', 'latitude'] as const;
// `long`: Open311 GeoReport v2's name (Chicago, Köln and most city APIs speaking it).
const LNG_KEYS = ['lng', 'lon', 'long', 'longitude'] as const;
const ALIASES = [...LAT_KEYS, ...LNG_KEYS];
const POINT_KEYS = ['type', 'coordinates'];

/**
 * The coordinates of a wire object, from `location` ({lat|latitude, lng|lon|long|longitude}, or a GeoJSON
 * `Point` {type, coordinates: [lng, lat] or [lng, lat, altitude]}) or else the top-level aliases. Nothing
 * is dropped unseen: keys of `location` it does not read come back in `leftover` as `location.<key>` (kept
 * in `extra`; a position with an altitude as `location.coordinates`, whole), and an
 * alias that names a different value than the one read (`location.lat` 40.7 and `latitude` 41) is an
 * issue, not a silent choice. An alias with the same value (NYC 311's `latitude` beside its `location`)
 * is a copy and goes.
 */
export function readLocation(obj: Record<string, unknown>): LocationRead {
  const loc = obj.location;
  if (loc === undefined || loc === null) return pickCoordinates(obj, null, obj, null);
  if (typeof loc !== 'object' || Array.isArray(loc)) {
    return {
      issue: {
        path: 'location',
        message:
          'expected an object {lat, lng}, a GeoJSON Point or null (as text in a CSV cell: its JSON, ' +
          '"(lat, lng)" or "POINT (lng lat)")',
        code: RECORD_ISSUE_CODES.invalidType,
      },
    };
  }
  const l = loc as Record<string, unknown>;
  const c = l.coordinates;
  if (l.type === 'Point' && Array.isArray(c) && (c.length === 2 || c.length === 3) && !hasAny(l, ALIASES)) {
    // A third element is an altitude (RFC 7946 §3.1.1): the position is then kept whole, as sent.
    const read = c.length === 2 ? POINT_KEYS : ['type'];
    return keyedOnce(obj, pickCoordinates({ lat: c[1], lng: c[0] }, null, obj, leftoverOf(l, read)));
  }
  return keyedOnce(obj, pickCoordinates(l, l, obj, leftoverOf(l, ALIASES)));
}

// `(40.7128, -74.006)`: a Socrata export's location column (NYC 311's among them), latitude first.
const PAIR = /^\(\s*([-+]?\d+(?:\.\d+)?)\s*,\s*([-+]?\d+(?:\.\d+)?)\s*\)$/;
// `POINT (-74.006 40.7128)`: well-known text, longitude first.
const WKT_POINT = /^POINT\s*\(\s*([-+]?\d+(?:\.\d+)?)\s+([-+]?\d+(?:\.\d+)?)\s*\)$/i;

/**
 * A `location` given as text (a CSV cell cannot hold an object) read as the object it writes: JSON of an
 * object (`{"lat":…,"lng":…}`, a GeoJSON `Point`) or a Python `repr` of a dict of strings, a Socrata pair
 * `(lat, lng)` (alone, or after the address lines of Socrata's older form), or WKT `POINT (lng lat)`.
 * Any other text comes back as it is, for {@link readLocation} to refuse with its issue.
 */
export function locationOfText(text: string): unknown {
  const t = text.trim();
  if (t.startsWith('{')) return objectOfText(t) ?? text;
  const pair = PAIR.exec(t);
  if (pair) return { lat: Number(pair[1]), lng: Number(pair[2]) };
  const point = WKT_POINT.exec(t);
  if (point) return { lat: Number(point[2]), lng: Number(point[1]) };
  // Socrata's older form: the address on the lines before the pair (kept as `location.human_address`).
  const lines = t.split(/\r?\n/);
  const last = PAIR.exec(lines.at(-1)!.trim());
  if (lines.length > 1 && last) {
    const address = lines.slice(0, -1).join('\n').trim();
    // Empty address parts print as `,` alone: nothing to keep.
    const kept = /^[\s,]*$/.test(address) ? {} : { human_address: address };
    return { lat: Number(last[1]), lng: Number(last[2]), ...kept };
  }
  return text;
}

// A single-quoted string of a Python `repr` (NYC 311's CSV writes its location dict so): `\'` and `\\` escaped.
const PY_STRING = /'((?:[^'\\]|\\.)*)'/g;

/**
 * An object from JSON text, or from a Python `repr` of a dict of strings (`{'latitude': '40.8', …}`, how a
 * CSV writer printed Socrata's location object), else undefined.
 */
function objectOfText(t: string): Record<string, unknown> | undefined {
  const asObject = (json: string) => {
    try {
      const parsed: unknown = JSON.parse(json);
      return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : undefined;
    } catch {
      return undefined;
    }
  };
  const json = asObject(t);
  if (json !== undefined) return withNumberTexts(t, json);
  if (!t.includes("'")) return undefined;
  return asObject(
    t.replace(PY_STRING, (_, body: string) => JSON.stringify(body.replace(/\\(['\\])/g, '$1'))),
  );
}

/**
 * `object` (parsed from the JSON `text`) with each key it does not read as a coordinate that holds a number
 * set to that value's text (json-text.ts `extraValue`): `1.50`, `1e400` are kept as sent, as they are from
 * a `location` object of an NDJSON line.
 */
function withNumberTexts(text: string, object: Record<string, unknown>): Record<string, unknown> {
  const point = object.type === 'Point';
  for (const f of scanJsonObject(text).fields) {
    if ((ALIASES as readonly string[]).includes(f.key) || (point && f.key === 'coordinates')) continue;
    if (holdsNumber(object[f.key])) object[f.key] = extraValue(canonicalJsonText(text, f.start, f.end));
  }
  return object;
}

/**
 * `read`, or the issue when a kept key of `location` (`location.<key>` in `extra`) is also a top-level
 * field of that very name: one of the two would be lost in `extra`, so neither is chosen.
 */
function keyedOnce(obj: Record<string, unknown>, read: LocationRead): LocationRead {
  if ('issue' in read || read.leftover === null) return read;
  for (const key of Object.keys(read.leftover)) {
    if (!Object.hasOwn(obj, key)) continue;
    const message = `given twice: as the top-level field ${JSON.stringify(key)} and as key ${JSON.stringify(key.slice(9))} of location`;
    return { issue: { path: key, message, code: RECORD_ISSUE_CODES.conflictingValues } };
  }
  return read;
}

/**
 * The first coordinates of `from` by alias; every alias given in `location` (the location object, when
 * there is one) and in `top` (the record) must name the same value, else the issue.
 */
function pickCoordinates(
  from: Record<string, unknown>,
  location: Record<string, unknown> | null,
  top: Record<string, unknown>,
  leftover: Record<string, unknown> | null,
): LocationRead {
  const lat = from.lat ?? from.latitude;
  const lng = from.lng ?? from.lon ?? from.long ?? from.longitude;
  const clash =
    (location &&
      (differing(location, LAT_KEYS, lat, 'location.') ?? differing(location, LNG_KEYS, lng, 'location.'))) ??
    differing(top, LAT_KEYS, lat, '') ??
    differing(top, LNG_KEYS, lng, '');
  return clash
    ? { issue: { path: 'location', message: clash, code: RECORD_ISSUE_CODES.conflictingValues } }
    : { lat, lng, leftover };
}

/** The message for the first of `keys` in `o` that names another coordinate than `value`, else undefined. */
function differing(
  o: Record<string, unknown>,
  keys: readonly string[],
  value: unknown,
  prefix: string,
): string | undefined {
  for (const key of keys) {
    const other = o[key];
    if (other === undefined || other === null || sameCoordinate(other, value)) continue;
    return `${prefix}${key} (${JSON.stringify(other)}) differs from the coordinate read (${JSON.stringify(value)}): the location is given twice`;
  }
  return undefined;
}

function sameCoordinate(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  const n = (v: unknown) =>
    typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return n(a) === n(b);
}

function hasAny(o: Record<string, unknown>, keys: readonly string[]): boolean {
  return keys.some((k) => o[k] !== undefined);
}

/** The keys of a `location` object other than `read`, as `location.<key>` (null when none). */
function leftoverOf(l: Record<string, unknown>, read: readonly string[]): Record<string, unknown> | null {
  let leftover: Record<string, unknown> | null = null;
  for (const key of Object.keys(l)) {
    if (read.includes(key)) continue;
    leftover ??= Object.create(null) as Record<string, unknown>;
    leftover[`location.${key}`] = l[key];
  }
  return leftover;
}

/** `extra` with the leftover of the location appended (either may be null). */
export function withLeftover(
  extra: Record<string, unknown> | null,
  leftover: Record<string, unknown> | null,
): Record<string, unknown> | null {
  if (leftover === null) return extra;
  const out = extra ?? (Object.create(null) as Record<string, unknown>);
  for (const key of Object.keys(leftover)) if (!(key in out)) out[key] = leftover[key];
  return out;
}

/** The `location.<key>` entries of an `extra` that are no top-level field (see {@link leftoverOf}). */
export function leftoverIn(extra: Record<string, unknown>): Record<string, unknown> | null {
  let out: Record<string, unknown> | null = null;
  for (const key of Object.keys(extra)) {
    if (!key.startsWith('location.')) continue;
    out ??= Object.create(null) as Record<string, unknown>;
    out[key] = extra[key];
  }
  return out;
}

/**
 * {@link leftoverIn} with each value read again from the record's text (`fields`: its top-level fields), so
 * numbers keep their source form (`1.0`, `12345678901234567890`) as top-level unknown fields do.
 */
export function leftoverOfText(
  text: string,
  fields: readonly JsonField[],
  extra: Record<string, unknown>,
): Record<string, unknown> | null {
  const wanted = leftoverIn(extra);
  const loc = fields.find((f) => f.key === 'location');
  if (wanted === null || loc === undefined) return wanted;
  const object = text.slice(loc.start, loc.end);
  for (const f of scanJsonObject(object).fields) {
    const key = `location.${f.key}`;
    if (key in wanted) wanted[key] = extraValue(canonicalJsonText(object, f.start, f.end));
  }
  return wanted;
}
