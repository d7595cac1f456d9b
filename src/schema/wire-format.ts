import { hash } from 'node:crypto';
import { jsonTextOf } from './json-text.js';

// The wire format of a report: its canonical shape (what the warehouse stores and the reader serves), the
// field names on the wire and in CSV, and the one serialisation every writer uses. Validation, which
// turns wire records into this shape, is schema/report.ts.

/**
 * One citizen report in canonical form — what the warehouse stores and the reader serves.
 * Source of the shape: the Report of docs/upstream-contract.md (`destination`, `status`, a location) and docs/sources.md.
 *
 * - `id`: the upstream key, always a string (numbers are coerced).
 * - `status`, `destination`: upper-snake codes from open lists (unknown values are drift, not errors).
 * - `category`, `description`, `address`: text kept byte for byte, or `null`; an empty string stays an empty
 *   string (NDJSON `""`; in CSV a quoted `""`, while an unquoted empty cell is `null`: PostgreSQL's
 *   `COPY … CSV` rule, which the simulator's and the reader's CSV writers follow too).
 * - every text (id and codes included) is well-formed UTF-16, so it has a UTF-8 form: a lone surrogate is
 *   quarantined, never rewritten (value-rules.ts).
 * - `lat`/`lng`: WGS84 degrees, both or neither.
 * - `createdAt`/`updatedAt`: UTC, `toISOString()` form (see {@link normalizeTimestamp}); an `updatedAt`
 *   missing or `null` (Open311's `updated_datetime` of a request never updated) is `createdAt`.
 * - `extra`: every wire field we do not model, in wire order, or `null` when there is none: a null-prototype
 *   object (so `__proto__`, `constructor` are plain keys), values as `JSON.parse` gives them, or a
 *   `JsonText` (json-text.ts) when that would change them (a number a double cannot hold: `1e400`, `1.0`,
 *   `12345678901234567890`). Serialise with {@link canonicalJson} / `jsonTextOf`, never `JSON.stringify`.
 */
export interface Report {
  id: string;
  status: string;
  destination: string;
  category: string | null;
  description: string | null;
  lat: number | null;
  lng: number | null;
  address: string | null;
  createdAt: string;
  updatedAt: string;
  extra: Record<string, unknown> | null;
}

/** The wire object of a report (NDJSON line, list item): upstream field names, `location` nested, extras last. */
export type WireReport = Record<string, unknown>;

/** The known field names of the wire format, in wire order (the CSV columns use `lat`/`lng` instead of `location`). */
export const WIRE_FIELDS = [
  'id',
  'status',
  'destination',
  'category',
  'description',
  'location',
  'address',
  'createdAt',
  'updatedAt',
] as const;

/** CSV export columns (docs/sources.md), before any extra columns. */
export const CSV_COLUMNS = [
  'id',
  'status',
  'destination',
  'category',
  'description',
  'lat',
  'lng',
  'address',
  'createdAt',
  'updatedAt',
] as const;

/** Known values (stated upstream: `ROAD_CONTROL`, `SUBMITTED`, docs/upstream-contract.md; the rest from docs/architecture.md's lifecycle). Lists are open. */
export const KNOWN_STATUSES = ['SUBMITTED', 'IN_PROGRESS', 'RESOLVED', 'REJECTED'] as const;

// Keys that are aliases of the location (docs/sources.md) and so never land in `extra`.
const LOCATION_KEYS = new Set(['location', 'lat', 'lng', 'lon', 'long', 'latitude', 'longitude']);
/** The wire keys the schema models: the known fields and the location aliases. */
export const MODELLED_KEYS: ReadonlySet<string> = new Set<string>([...WIRE_FIELDS, ...LOCATION_KEYS]);

/** True for a wire key the schema models (a known field or a location alias); every other key is `extra`. */
export function isModelledKey(key: string): boolean {
  return MODELLED_KEYS.has(key);
}

/**
 * The wire object of a report: upstream field names in {@link WIRE_FIELDS} order, `location` as
 * `{lat, lng}` or `null`, then the `extra` fields. The simulator and the reader both serialise through
 * this, which is what makes their bodies comparable byte for byte.
 */
export function toWire(report: Report): WireReport {
  const wire: WireReport = {
    id: report.id,
    status: report.status,
    destination: report.destination,
    category: report.category,
    description: report.description,
    location: report.lat === null || report.lng === null ? null : { lat: report.lat, lng: report.lng },
    address: report.address,
    createdAt: report.createdAt,
    updatedAt: report.updatedAt,
  };
  if (report.extra) {
    for (const key of Object.keys(report.extra)) {
      if (Object.hasOwn(wire, key)) continue;
      // `__proto__` as a plain key: an assignment would set the prototype instead.
      Object.defineProperty(wire, key, { value: report.extra[key], enumerable: true, writable: true });
    }
  }
  return wire;
}

/**
 * The canonical JSON of a report: `JSON.stringify(toWire(report))` with every unknown field written exactly
 * (`JsonText` (json-text.ts) as its text), what the simulator and the reader serve and what {@link contentHash} hashes.
 */
export function canonicalJson(report: Report): string {
  const extra = report.extra;
  const known = JSON.stringify(toWire({ ...report, extra: null }));
  if (!extra) return known;
  let tail = '';
  for (const key of Object.keys(extra)) {
    if ((WIRE_FIELD_SET as Set<string>).has(key)) continue;
    tail += `,${JSON.stringify(key)}:${jsonTextOf(extra[key])}`;
  }
  return `${known.slice(0, -1)}${tail}}`;
}

const WIRE_FIELD_SET = new Set<string>(WIRE_FIELDS);

/**
 * Content hash of a report (hex SHA-1 of its canonical wire JSON, see {@link canonicalJson}): equal hashes
 * mean no business change. Used by the merge to tell changed from unchanged (docs/how-a-sync-works.md).
 * Pass `json` when it is at hand (one serialisation per record).
 */
export function contentHash(report: Report, json = canonicalJson(report)): string {
  return hash('sha1', json, 'hex');
}
