import { z } from 'zod';
import { isWithinLength, REPORT_RULES } from './report-rules.js';

/**
 * The query strings of the public endpoints, shared by the simulator and the reader so both answer a bad
 * query with the same 400 body. Source: docs/upstream-contract.md (the endpoints, filters `destination`, `status`; CSV
 * `pageSize`; rules 1–3; paging by 1-based `page`; the error body). Limits the upstream leaves "not
 * shown" (defaults, maxima) are our reading, fixed here.
 */

/** Path prefix of every public endpoint (stated upstream: docs/upstream-contract.md). */
export const PUBLIC_PREFIX = '/api/v1/public';

/** The public read endpoints by name. `ndjson` is our default NDJSON path (not shown upstream; docs/upstream-contract.md). */
export const PUBLIC_PATHS = {
  list: `${PUBLIC_PREFIX}/reports`,
  ndjson: `${PUBLIC_PREFIX}/reports.ndjson`,
  csv: `${PUBLIC_PREFIX}/reports.csv`,
  geojson: `${PUBLIC_PREFIX}/reports.geojson`,
  stats: `${PUBLIC_PREFIX}/reports/stats`,
} as const;

/** Name of a public endpoint: a key of {@link PUBLIC_PATHS}. */
export type PublicEndpoint = keyof typeof PUBLIC_PATHS;

/** `pageSize` of the list endpoint when none is given. */
export const LIST_PAGE_SIZE_DEFAULT = 50;
/** Largest `pageSize` the list endpoint accepts. */
export const LIST_PAGE_SIZE_MAX = 1000;
/** `pageSize` (rows per page) of the CSV endpoint when none is given (upstream contract rule 2 sets the meaning, not the value). */
export const CSV_PAGE_SIZE_DEFAULT = 1000;
/** Largest `pageSize` the CSV endpoint accepts. */
export const CSV_PAGE_SIZE_MAX = 10_000;
/** `page` when none is given: pages are 1-based (docs/sources.md). */
export const PAGE_DEFAULT = 1;
/** Largest `page` accepted: keeps `page * pageSize` an exact integer far below 2^53. */
export const PAGE_MAX = 1_000_000_000;
/** Longest `destination`/`status` filter value: the validator's limit (REPORT_RULES.codeMaxLength). */
export const CODE_MAX_LENGTH = REPORT_RULES.codeMaxLength;

/**
 * What a filter code may look like: exactly what the record validator accepts as a `status`/`destination`
 * ({@link REPORT_RULES}.code: non-blank, no control characters; spaces, lower case and quotes are legal, so
 * `IN PROGRESS` stored from the upstream can be asked for). Values are always bound as query parameters,
 * never spliced into SQL, so a quote or `../` is a code like any other that matches nothing.
 */
export const CODE_PATTERN = REPORT_RULES.code;

const codeMessage = `must be a code of 1 to ${CODE_MAX_LENGTH} characters, not blank, without control characters`;

/** A filter code (`destination`, `status`): see {@link CODE_PATTERN}; unknown codes simply match nothing. */
const codeParam = z
  .string()
  .refine((s) => isWithinLength(s, CODE_MAX_LENGTH) && CODE_PATTERN.test(s), { message: codeMessage });

/** A decimal integer parameter from `min` to `max` (no sign, no exponent, no spaces). */
function intParam(min: number, max: number) {
  const message = `must be an integer from ${min} to ${max}`;
  return z
    .string()
    .refine((s) => /^[0-9]{1,12}$/.test(s) && Number(s) >= min && Number(s) <= max, { message })
    .transform(Number);
}

/** Query of `GET /reports`: both filters AND-ed (upstream contract rule 1), paging 1-based, newest first. */
export const LIST_QUERY = z.object({
  destination: codeParam.optional(),
  status: codeParam.optional(),
  pageSize: intParam(1, LIST_PAGE_SIZE_MAX).default(LIST_PAGE_SIZE_DEFAULT),
  page: intParam(1, PAGE_MAX).default(PAGE_DEFAULT),
});

/** Query of `GET /reports.csv` (and of the export location it redirects to): rows per page and 1-based page. */
export const CSV_QUERY = z.object({
  pageSize: intParam(1, CSV_PAGE_SIZE_MAX).default(CSV_PAGE_SIZE_DEFAULT),
  page: intParam(1, PAGE_MAX).default(PAGE_DEFAULT),
});

/** Query of `GET /reports.geojson`: the list's filters; no paging (the whole filtered set is one FeatureCollection). */
export const GEOJSON_QUERY = z.object({
  destination: codeParam.optional(),
  status: codeParam.optional(),
});

/** Query of `GET /reports.ndjson` and `GET /reports/stats`: no parameters at all. */
export const EMPTY_QUERY = z.object({});

/** The query schema of every public endpoint. */
export const PUBLIC_QUERY_SCHEMAS = {
  list: LIST_QUERY,
  csv: CSV_QUERY,
  geojson: GEOJSON_QUERY,
  ndjson: EMPTY_QUERY,
  stats: EMPTY_QUERY,
} as const satisfies Record<PublicEndpoint, z.ZodObject>;

/** The parsed query of endpoint `E` (defaults applied, integers as numbers). */
export type PublicQuery<E extends PublicEndpoint> = z.output<(typeof PUBLIC_QUERY_SCHEMAS)[E]>;
/** Parsed query of the list endpoint. */
export type ListQuery = PublicQuery<'list'>;
/** Parsed query of the CSV endpoint. */
export type CsvQuery = PublicQuery<'csv'>;
/** Parsed query of the GeoJSON endpoint. */
export type GeojsonQuery = PublicQuery<'geojson'>;

/** One problem of an error: the offending query parameter and what is wrong or allowed. */
export interface ApiErrorDetail {
  param: string;
  message: string;
}

/**
 * The error body of every public endpoint (docs/sources.md): `{"error": {"code", "message", "details"?}}`.
 * Codes used: `INVALID_QUERY` (400), `NOT_FOUND` (404), `METHOD_NOT_ALLOWED` (405), `RATE_LIMITED` (429),
 * `UNAVAILABLE` (503), `INTERNAL` (other 5xx); the simulator's admin endpoints add `INVALID_FAULT` and its
 * `status` fault `SIMULATED_FAULT` (other 4xx).
 */
export interface ApiErrorBody {
  error: { code: string; message: string; details?: ApiErrorDetail[] };
}

/** Builds an {@link ApiErrorBody}; `details` is left out when not given. */
export function apiError(code: string, message: string, details?: ApiErrorDetail[]): ApiErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/** The outcome of {@link validatePublicQuery}: the parsed query, or the 400 body to send. */
export type QueryValidation<E extends PublicEndpoint> =
  { ok: true; query: PublicQuery<E> } | { ok: false; status: 400; body: ApiErrorBody };

/**
 * Validates the query string of a public endpoint. Refused, with one detail per problem, in parameter order:
 * a parameter the endpoint does not know, a parameter given more than once, an empty, over-long or ill-formed filter
 * code, an integer that is not a plain decimal in range (`abc`, `-1`, `0`, `1e3`, over the maximum).
 * The message names every offending parameter, the value and what is allowed. Never throws.
 *
 * @example
 * const v = validatePublicQuery('list', new URL(req.url, base).searchParams);
 * if (!v.ok) return sendJson(res, v.status, v.body);
 */
export function validatePublicQuery<E extends PublicEndpoint>(
  endpoint: E,
  params: URLSearchParams,
): QueryValidation<E> {
  const schema: z.ZodObject = PUBLIC_QUERY_SCHEMAS[endpoint];
  const known = Object.keys(schema.shape);
  const details: ApiErrorDetail[] = [];
  const raw: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, value] of params) {
    if (!known.includes(name)) {
      if (!seen.has(name)) {
        const allowed =
          known.length === 0 ? 'this endpoint takes no parameters' : `allowed: ${known.join(', ')}`;
        details.push({ param: name, message: `unknown parameter (${allowed})` });
      }
    } else if (seen.has(name)) {
      if (raw[name] !== undefined) details.push({ param: name, message: 'given more than once' });
      delete raw[name];
    } else {
      raw[name] = value;
    }
    seen.add(name);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const param = String(issue.path[0] ?? '');
      if (!details.some((d) => d.param === param)) details.push({ param, message: issue.message });
    }
  }
  if (details.length === 0 && parsed.success) {
    return { ok: true, query: parsed.data as PublicQuery<E> };
  }
  const order = [...params.keys()];
  details.sort((a, b) => order.indexOf(a.param) - order.indexOf(b.param));
  const described = details.map((d) => {
    const value = params.get(d.param);
    const shown =
      value === null ? '' : ` (got ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)})`;
    return `${d.param} ${d.message}${shown}`;
  });
  return {
    ok: false,
    status: 400,
    body: apiError(
      'INVALID_QUERY',
      `Invalid query for GET ${PUBLIC_PATHS[endpoint]}: ${described.join('; ')}.`,
      details,
    ),
  };
}
