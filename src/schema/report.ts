import { csvIdCell } from './csv-id.js';
import { z } from 'zod';
import { fastCore, type CoreReport } from './fast-core.js';
import { RECORD_ISSUE_CODES, type RecordIssue } from './record-issue.js';
import { REPORT_RULES as RULES } from './report-rules.js';
import { leftoverOfText, locationOfText, readLocation, withLeftover } from './location.js';
import { normalizeTimestamp, timestampIssue } from './timestamp.js';
import {
  checkExtra,
  DEFAULT_EXTRA_LIMITS,
  isWellFormedText,
  loneSurrogateIssue,
  sizeIssue,
  type ExtraLimits,
} from './value-rules.js';
import { canonicalJsonText, extraObjectJson, extraValue, type JsonField } from './json-text.js';
import { MODELLED_KEYS, type Report } from './wire-format.js';

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
    // Negative too: the CSV cell `-5` is the id `-5`, and so must the JSON integer be.
    z
      .number()
      .int()
      .transform((n) => String(n)),
  ],
  {
    error:
      'expected a non-blank string or an integer of at most 2^53 − 1 in magnitude (a larger one: as plain digits or as a string)',
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
  z.union([z.union([z.null(), z.undefined(), z.literal('')]).transform(() => null), s], {
    error: 'expected a number of degrees (JSON number or decimal text), or null',
  });

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
 * `location: {latitude, longitude}`, a GeoJSON `Point` or top-level `latitude/longitude` / `lat` + `lng|lon|long`
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
  return finish(core.safeParse({ ...obj, lat: loc.lat, lng: loc.lng }), extra, limits, source, obj);
}

/**
 * One CSV row: column name → cell text, or `null` for an unquoted empty cell (PostgreSQL's `COPY … CSV`
 * rule: unquoted empty is NULL, a quoted `""` is the empty string; extract/csv.ts reads cells so).
 */
export type CsvRow = Record<string, string | null | undefined>;

/**
 * Validates one CSV row ({@link CsvRow}). Coerces `lat`/`lng` from text (an empty one is `null`; the columns
 * `latitude`, `lon`, `long`, `longitude` are read as their aliases, as in NDJSON; a `location` cell is read from its
 * text, JSON, `(lat, lng)` or `POINT (lng lat)`, and a second value for a coordinate is an issue, see
 * readLocation); a `null`
 * cell is `null`, a quoted empty cell the empty string (but an empty `updatedAt` is `null` either way: no
 * timestamp is empty text); extra columns that are not `null` go to `extra` as
 * strings (within `limits`). Never throws. Common rows take the hot path ({@link fastCore}), the rest the
 * zod schema.
 */
export function validateCsvReport(
  cells: CsvRow,
  limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
): ValidationResult {
  const row = csvTimestampCells(cells);
  const loc = readLocation(csvLocationCells(row));
  if ('issue' in loc) return { ok: false, issues: [loc.issue] };
  const extra = withLeftover(csvExtra(row), loc.leftover);
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
  return finish(core.safeParse({ ...row, lat: loc.lat, lng: loc.lng }), extra, limits, undefined, row);
}

/** {@link validateCsvReport} through the zod schema only (the hot path's reference in tests). */
export function validateCsvReportWithZod(
  cells: CsvRow,
  limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
): ValidationResult {
  const row = csvTimestampCells(cells);
  const loc = readLocation(csvLocationCells(row));
  if ('issue' in loc) return { ok: false, issues: [loc.issue] };
  const extra = withLeftover(csvExtra(row), loc.leftover);
  return finish(core.safeParse({ ...row, lat: loc.lat, lng: loc.lng }), extra, limits, undefined, row);
}

/**
 * `row` with a quoted empty `updatedAt` read as NULL, as an unquoted one is: a writer that quotes every cell
 * (Python's `csv.QUOTE_ALL`) writes a report never updated as `""`, and no timestamp is empty text.
 */
function csvTimestampCells(row: CsvRow): CsvRow {
  const id = csvIdCell(row.id);
  if (row.updatedAt !== '' && id === row.id) return row;
  return { ...row, id, ...(row.updatedAt === '' ? { updatedAt: null } : {}) };
}

// CSV alias columns: an empty cell (quoted or not) is no value, as a CSV cannot leave a column out.
const CSV_ALIASES = ['latitude', 'longitude', 'lon', 'long', 'location'];

/**
 * `row` with empty alias cells read as absent and a `location` cell read as the object its text writes
 * (locationOfText: JSON, `(lat, lng)`, `POINT (lng lat)`), for readLocation.
 */
function csvLocationCells(row: CsvRow): Record<string, unknown> {
  const text = typeof row.location === 'string' && row.location !== '' ? row.location : undefined;
  if (text === undefined && !CSV_ALIASES.some((k) => row[k] === '')) return row;
  const out: Record<string, unknown> = { ...row };
  for (const k of CSV_ALIASES) if (out[k] === '') out[k] = undefined;
  if (text !== undefined) {
    out.location = locationOfText(text);
    // Beside a location, an empty coordinate cell (quoted by a writer quoting every cell) says nothing.
    for (const k of ['lat', 'lng']) if (out[k] === '') out[k] = undefined;
  }
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
    // With the text, the size that counts is that of the values as sent, checked once they are read.
    const issue = checkExtra(parsedExtra, source ? { ...limits, maxBytes: Infinity } : limits);
    if (issue) return { ok: false, issues: [issue] };
    if (source) {
      extra = withLeftover(extraOfText(source), leftoverOfText(source.text, source.fields, parsedExtra));
      const tooLarge = extra === null ? undefined : sizeIssue(extraObjectJson(extra), limits.maxBytes);
      if (tooLarge) return { ok: false, issues: [tooLarge] };
    }
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
  input?: Record<string, unknown>,
): ValidationResult {
  if (!parsed.success) {
    const issue = extra === null ? undefined : checkExtra(extra, limits);
    const issues = toIssues(parsed.error, input);
    return { ok: false, issues: issue ? [...issues, issue] : issues };
  }
  const data = parsed.data;
  return withExtra({ ...data, updatedAt: data.updatedAt ?? data.createdAt }, extra, limits, source);
}

function extraOf(obj: Record<string, unknown>, known: ReadonlySet<string>): Record<string, unknown> | null {
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

function toIssues(error: z.ZodError, input?: Record<string, unknown>): RecordIssue[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join('.') || '';
    if (input !== undefined && REQUIRED_FIELDS.has(path) && !Object.hasOwn(input, path))
      return missingField(path);
    return { path, message: issue.message, code: issueCode(issue) };
  });
}

// The fields a report cannot be without (schema/report-rules.ts).
const REQUIRED_FIELDS = new Set(['id', 'status', 'destination', 'createdAt']);

/** The issue of a required field the record does not carry: its name may be the service's own. */
function missingField(field: string): RecordIssue {
  return {
    path: field,
    message:
      `the record has no \`${field}\` (if the service names it otherwise, REPORTS_FIELD_NAMES maps it: ` +
      `${field}=<its name>)`,
    code: RECORD_ISSUE_CODES.missingField,
  };
}
