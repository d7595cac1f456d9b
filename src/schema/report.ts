import { hash } from 'node:crypto';
import { z } from 'zod';
import { fastCore, type CoreReport } from './fast-core.js';
import { RECORD_ISSUE_CODES, type RecordIssue } from './record-issue.js';
import { REPORT_RULES as RULES } from './report-rules.js';
import { leftoverOfText, readLocation, withLeftover } from './location.js';
import { normalizeTimestamp, timestampIssue } from './timestamp.js';
import {
  checkExtra,
  DEFAULT_EXTRA_LIMITS,
  isWellFormedText,
  loneSurrogateIssue,
  type ExtraLimits,
} from './value-rules.js';
import { canonicalJsonText, extraValue, jsonTextOf, JsonText, type JsonField } from './json-text.js';

export { JsonText };

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
 *   {@link JsonText} when that would change them (a number a double cannot hold: `1e400`, `1.0`,
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
const LOCATION_KEYS = new Set(['location', 'lat', 'lng', 'lon', 'latitude', 'longitude']);
const MODELLED_KEYS = new Set<string>([...WIRE_FIELDS, ...LOCATION_KEYS]);

/** True for a wire key the schema models (a known field or a location alias); every other key is `extra`. */
export function isModelledKey(key: string): boolean {
  return MODELLED_KEYS.has(key);
}

const wellFormed = (s: string) => isWellFormedText(s);
// A refinement's own issue code (zod's code is `custom`), read back by toIssues.
const SURROGATE = {
  message: loneSurrogateIssue('').message,
  params: { code: RECORD_ISSUE_CODES.invalidText },
};
const code = z
  .string({ error: 'expected a non-blank code string' })
  .max(RULES.codeMaxLength)
  .regex(RULES.code, 'must not be blank or hold control characters')
  .refine(wellFormed, SURROGATE);
const text = z
  .string()
  .max(RULES.textMaxLength)
  .refine(wellFormed, SURROGATE)
  .nullish()
  .transform((v) => (v === undefined ? null : v));
const id = z.union(
  [
    z
      .string()
      .max(RULES.idMaxLength)
      .regex(RULES.nonBlank, 'must not be blank')
      .refine(wellFormed, SURROGATE),
    z
      .number()
      .int()
      .nonnegative()
      .transform((n) => String(n)),
  ],
  {
    error:
      'expected a non-blank string or a non-negative integer of at most 2^53 − 1 (a larger one: as a string)',
  },
);
const timestamp = z.string().transform((value, ctx) => {
  const normalized = normalizeTimestamp(value);
  if (normalized === null) {
    ctx.addIssue({
      code: 'custom',
      message: timestampIssue(value),
      params: { code: RECORD_ISSUE_CODES.invalidTimestamp },
    });
    return z.NEVER;
  }
  return normalized;
});
const numeric = z.union([z.number(), z.string().regex(RULES.numericText, 'not a number').transform(Number)]);
const latitude = numeric.pipe(z.number().min(-RULES.maxLatitude).max(RULES.maxLatitude));
const longitude = numeric.pipe(z.number().min(-RULES.maxLongitude).max(RULES.maxLongitude));
const optionalCoordinate = <T extends z.ZodType>(s: T) =>
  z
    .union([z.null(), z.undefined(), z.literal('')])
    .transform(() => null)
    .or(s);

/** The fields every wire variant must produce before they become a {@link Report}. */
const core = z
  .object({
    id,
    status: code,
    destination: code,
    category: text,
    description: text,
    lat: optionalCoordinate(latitude),
    lng: optionalCoordinate(longitude),
    address: text,
    createdAt: timestamp,
    updatedAt: timestamp.nullish(),
  })
  .superRefine((r, ctx) => {
    if ((r.lat === null) !== (r.lng === null)) {
      ctx.addIssue({
        code: 'custom',
        path: ['location'],
        message: 'lat and lng must be given together',
        params: { code: RECORD_ISSUE_CODES.incompleteLocation },
      });
    }
  });

export type { RecordIssue } from './record-issue.js';

/** The outcome of validating one wire record: a canonical report, or the issues that quarantine it. */
export type ValidationResult = { ok: true; report: Report } | { ok: false; issues: RecordIssue[] };

/**
 * Validates one NDJSON object (or list item). Accepts the location as `location: {lat, lng|lon}`,
 * `location: {latitude, longitude}`, a GeoJSON `Point` or top-level `latitude/longitude` / `lat` + `lng|lon`
 * (docs/sources.md aliases; other keys of `location` go to `extra` as `location.<key>`, see readLocation).
 * Unknown fields go to `extra` unchanged, within `limits` (quarantined past them, see {@link checkExtra}).
 * Never throws.
 *
 * Common records take the hot path ({@link fastCore}); anything it does not vouch for goes through the zod
 * schema ({@link validateWireReportWithZod}), which decides and words the issues.
 */
export function validateWireReport(
  value: unknown,
  limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
  source?: WireSource,
): ValidationResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      issues: [{ path: '', message: 'expected a JSON object', code: RECORD_ISSUE_CODES.invalidType }],
    };
  }
  const obj = value as Record<string, unknown>;
  const loc = readLocation(obj);
  if ('issue' in loc) return { ok: false, issues: [loc.issue] };
  const fast = fastCore(
    obj.id,
    obj.status,
    obj.destination,
    obj.category,
    obj.description,
    loc.lat,
    loc.lng,
    obj.address,
    obj.createdAt,
    obj.updatedAt,
  );
  if (fast) return withExtra(fast, withLeftover(extraOf(obj, MODELLED_KEYS), loc.leftover), limits, source);
  return validateWireReportWithZod(value, limits, source);
}

/**
 * The text a wire object was parsed from and its top-level fields (json-text.ts `scanJsonObject`): with it,
 * unknown fields keep the values exactly as sent (numbers as their source text).
 */
export interface WireSource {
  text: string;
  fields: readonly JsonField[];
}

/**
 * {@link validateWireReport} through the zod schema only: the reference the hot path is tested against,
 * and its fallback. Never throws.
 */
export function validateWireReportWithZod(
  value: unknown,
  limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
  source?: WireSource,
): ValidationResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      issues: [{ path: '', message: 'expected a JSON object', code: RECORD_ISSUE_CODES.invalidType }],
    };
  }
  const obj = value as Record<string, unknown>;
  const loc = readLocation(obj);
  if ('issue' in loc) return { ok: false, issues: [loc.issue] };
  const extra = withLeftover(extraOf(obj, MODELLED_KEYS), loc.leftover);
  return finish(core.safeParse({ ...obj, lat: loc.lat, lng: loc.lng }), extra, limits, source);
}

/**
 * One CSV row: column name → cell text, or `null` for an unquoted empty cell (PostgreSQL's `COPY … CSV`
 * rule: unquoted empty is NULL, a quoted `""` is the empty string; extract/csv.ts reads cells so).
 */
export type CsvRow = Record<string, string | null | undefined>;

/**
 * Validates one CSV row ({@link CsvRow}). Coerces `lat`/`lng` from text (an empty one is `null`; the columns
 * `latitude`, `lon`, `longitude` are read as their aliases, as in NDJSON, and a second value for a coordinate
 * or a `location` cell that is not empty is an issue, see readLocation); a `null`
 * cell is `null`, a quoted empty cell the empty string; extra columns that are not `null` go to `extra` as
 * strings (within `limits`). Never throws. Common rows take the hot path ({@link fastCore}), the rest the
 * zod schema.
 */
export function validateCsvReport(row: CsvRow, limits: ExtraLimits = DEFAULT_EXTRA_LIMITS): ValidationResult {
  const loc = readLocation(csvLocationCells(row));
  if ('issue' in loc) return { ok: false, issues: [loc.issue] };
  const extra = csvExtra(row);
  const fast = fastCore(
    row.id,
    row.status,
    row.destination,
    row.category,
    row.description,
    loc.lat,
    loc.lng,
    row.address,
    row.createdAt,
    row.updatedAt,
  );
  if (fast) return withExtra(fast, extra, limits);
  return finish(core.safeParse({ ...row, lat: loc.lat, lng: loc.lng }), extra, limits);
}

/** {@link validateCsvReport} through the zod schema only (the hot path's reference in tests). */
export function validateCsvReportWithZod(
  row: CsvRow,
  limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
): ValidationResult {
  const loc = readLocation(csvLocationCells(row));
  if ('issue' in loc) return { ok: false, issues: [loc.issue] };
  return finish(core.safeParse({ ...row, lat: loc.lat, lng: loc.lng }), csvExtra(row), limits);
}

// CSV alias columns: an empty cell (quoted or not) is no value, as a CSV cannot leave a column out.
const CSV_ALIASES = ['latitude', 'longitude', 'lon', 'location'];

/** `row` with empty alias cells read as absent (for readLocation). */
function csvLocationCells(row: CsvRow): CsvRow {
  if (!CSV_ALIASES.some((k) => row[k] === '')) return row;
  const out = { ...row };
  for (const k of CSV_ALIASES) if (out[k] === '') out[k] = undefined;
  return out;
}

function csvExtra(row: CsvRow): Record<string, unknown> | null {
  const extra = Object.create(null) as Record<string, unknown>;
  let hasExtra = false;
  for (const key of Object.keys(row)) {
    if (MODELLED_KEYS.has(key)) continue;
    const cell = row[key];
    if (cell === undefined || cell === null) continue;
    extra[key] = cell;
    hasExtra = true;
  }
  return hasExtra ? extra : null;
}

// `extra` holds the parsed values, checked against `limits` before anything walks them recursively; with
// `source`, the stored values are then read from the text so numbers keep their source form.
function withExtra(
  r: CoreReport,
  parsedExtra: Record<string, unknown> | null,
  limits: ExtraLimits,
  source?: WireSource,
): ValidationResult {
  let extra = parsedExtra;
  if (parsedExtra !== null) {
    const issue = checkExtra(parsedExtra, limits);
    if (issue) return { ok: false, issues: [issue] };
    if (source)
      extra = withLeftover(extraOfText(source), leftoverOfText(source.text, source.fields, parsedExtra));
  }
  const report: Report = {
    id: r.id,
    status: r.status,
    destination: r.destination,
    category: r.category,
    description: r.description,
    lat: r.lat,
    lng: r.lng,
    address: r.address,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    extra,
  };
  return { ok: true, report };
}

function finish(
  parsed: z.ZodSafeParseResult<z.output<typeof core>>,
  extra: Record<string, unknown> | null,
  limits: ExtraLimits,
  source?: WireSource,
): ValidationResult {
  if (!parsed.success) {
    const issue = extra === null ? undefined : checkExtra(extra, limits);
    return { ok: false, issues: issue ? [...toIssues(parsed.error), issue] : toIssues(parsed.error) };
  }
  const data = parsed.data;
  return withExtra({ ...data, updatedAt: data.updatedAt ?? data.createdAt }, extra, limits, source);
}

function extraOf(obj: Record<string, unknown>, known: Set<string>): Record<string, unknown> | null {
  let extra: Record<string, unknown> | null = null;
  for (const key of Object.keys(obj)) {
    if (known.has(key)) continue;
    extra ??= Object.create(null) as Record<string, unknown>;
    extra[key] = obj[key];
  }
  return extra;
}

function extraOfText(source: WireSource): Record<string, unknown> | null {
  let extra: Record<string, unknown> | null = null;
  for (const f of source.fields) {
    if (MODELLED_KEYS.has(f.key)) continue;
    extra ??= Object.create(null) as Record<string, unknown>;
    extra[f.key] = extraValue(canonicalJsonText(source.text, f.start, f.end));
  }
  return extra;
}

// zod's code, or for a refinement (`custom`) the code it names in its params.
function issueCode(issue: z.core.$ZodIssue): string {
  const own = issue.code === 'custom' ? (issue.params as { code?: unknown } | undefined)?.code : undefined;
  return typeof own === 'string' ? own : issue.code;
}

function toIssues(error: z.ZodError): RecordIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '',
    message: issue.message,
    code: issueCode(issue),
  }));
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
 * ({@link JsonText} as its text), what the simulator and the reader serve and what {@link contentHash} hashes.
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
