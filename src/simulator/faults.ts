import { z } from 'zod';
import type { PublicEndpoint } from '../schema/public-query.js';

/**
 * Fault switches of the simulator (docs/architecture.md): deterministic misbehaviour of the upstream that the
 * extractor must survive (docs/how-a-sync-works.md). A fault targets one endpoint (or `all`) and, with `times`, only
 * the first N requests it applies to. Faults are plain JSON data: settable in-process, through
 * `POST /__admin/faults`, and from the CLI in the compact syntax of parse-fault-spec.ts.
 */

/** Endpoints a fault can target; `all` matches every public endpoint where the fault kind makes sense. */
export const FAULT_ENDPOINTS = ['ndjson', 'csv', 'list', 'geojson', 'stats', 'all'] as const;
/** A fault target: a public endpoint other than the login page, or `all`. */
export type FaultEndpoint = (typeof FAULT_ENDPOINTS)[number];

/** Ways a CSV page can be broken (the `csvWart` fault). */
export const CSV_WARTS = [
  'unclosedQuote',
  'strayQuote',
  'raggedRow',
  'bom',
  'mixedNewlines',
  'blankLines',
] as const;
/** One of {@link CSV_WARTS}. */
export type CsvWart = (typeof CSV_WARTS)[number];

/** Where the `redirect` fault sends the client. */
export const REDIRECT_TARGETS = ['loop', 'crossOrigin', 'login'] as const;

/** Default size of the `giant` fault's field: 5 MiB. */
export const GIANT_DEFAULT_BYTES = 5 * 1024 * 1024;

const positiveInt = z.number().int().min(1);
const byteCount = z.number().int().min(0);
const positions = z.array(z.number().int().min(0)).min(1);
const base = { endpoint: z.enum(FAULT_ENDPOINTS), times: positiveInt.optional() };
/** `every`: one affected record per `every` records; `at`: 0-based record positions in the response body. */
const selection = { every: positiveInt.optional(), at: positions.optional() };

/**
 * The zod schema of one fault (what `POST /__admin/faults` accepts). Kinds:
 * - `latency` `{ms}`: wait before sending the headers.
 * - `stall` `{afterBytes?}`: send the headers (and `afterBytes` body bytes, default 0), then nothing, until
 *   the client gives up or the simulator closes.
 * - `status` `{status, retryAfter?, retryAfterForm?}`: answer that status (e.g. 429, 503) with an error body
 *   and, when `retryAfter` (seconds) is given, a `Retry-After` header in `seconds` form (default) or as an
 *   HTTP `date` that many seconds ahead.
 * - `reset` `{afterBytes}`: after that many body bytes, reset the TCP connection (RST: the client sees
 *   ECONNRESET). For `reset`, `chunkedCut` and `stall=N`, a body shorter than the threshold is served whole
 *   (for `stall`, then held open).
 * - `cut` `{afterBytes}`: close-delimited body (`Connection: close`, neither `Content-Length` nor chunked),
 *   cleanly closed mid-line after about that many bytes: only the last line tells that the body is short.
 * - `chunkedCut` `{afterBytes}`: chunked body whose socket is closed after that many bytes without the
 *   terminating zero-length chunk.
 * - `malformed` `{every?, at?}` (NDJSON): extra lines that are not JSON objects are inserted after every
 *   `every` records and/or before the records at positions `at`. Default `every: 10`.
 * - `csvWart` `{wart, every?, at?}` (CSV): the data rows at `at` (or every `every`-th row) of each page are
 *   broken as named; `bom` prefixes the page instead. Default `at: [1]`.
 * - `giant` `{bytes?, at?}` (NDJSON, CSV): the records at positions `at` (default `[1]`) get a
 *   `description` of `bytes` bytes (default {@link GIANT_DEFAULT_BYTES}).
 * - `duplicates` `{every?, at?}` (NDJSON, CSV): the selected records are emitted twice, an older or tied
 *   version next to the current one (see record-faults.ts). Default `every: 5`. On CSV the extra versions
 *   are extra rows of the same page, so such a page holds more than `pageSize` rows.
 * - `redirect` `{target, to?, code?}`: answer a redirect (`code`, default 302) instead of the data: `loop`
 *   (to a URL that redirects back), `crossOrigin` (same path and query on `to`, a base URL or a port on the
 *   same host), `login` (to an HTML sign-in page answered with 200 `text/html`). On `csv` it replaces the
 *   redirect of `/reports.csv`.
 * - `regenerate` (NDJSON, CSV): every request sees a newly generated export: a new `ETag` and the same
 *   records in a different order; `Range` is ignored.
 * - `ignorePage` (CSV, list): the `page` parameter is ignored (page 1 is served, `Link` still points on).
 * - `noValidators` (NDJSON, CSV, stats): no `ETag` and no `Last-Modified` (and no 304).
 * - `capPageSize` `{rows}` (CSV): pages hold at most `rows` rows whatever `pageSize` asks; page offsets and
 *   `Link` follow the capped size (a server's silent cap).
 * - `emptyPage` `{at}` (CSV): the pages numbered `at` (1-based) are answered header-only; the data moves one
 *   page on per such page, so no row is lost (`Link` still points on).
 */
export const FAULT_SPEC_SCHEMA = z.discriminatedUnion('kind', [
  z.strictObject({ ...base, kind: z.literal('latency'), ms: byteCount.max(600_000) }),
  z.strictObject({ ...base, kind: z.literal('stall'), afterBytes: byteCount.optional() }),
  z.strictObject({
    ...base,
    kind: z.literal('status'),
    status: z.number().int().min(400).max(599),
    retryAfter: byteCount.max(86_400).optional(),
    retryAfterForm: z.enum(['seconds', 'date']).optional(),
  }),
  z.strictObject({ ...base, kind: z.literal('reset'), afterBytes: byteCount }),
  z.strictObject({ ...base, kind: z.literal('cut'), afterBytes: byteCount }),
  z.strictObject({ ...base, kind: z.literal('chunkedCut'), afterBytes: byteCount }),
  z.strictObject({ ...base, kind: z.literal('malformed'), ...selection }),
  z.strictObject({ ...base, kind: z.literal('csvWart'), wart: z.enum(CSV_WARTS), ...selection }),
  z.strictObject({
    ...base,
    kind: z.literal('giant'),
    bytes: positiveInt.max(512 * 1024 * 1024).optional(),
    at: positions.optional(),
  }),
  z.strictObject({ ...base, kind: z.literal('duplicates'), ...selection }),
  z.strictObject({
    ...base,
    kind: z.literal('redirect'),
    target: z.enum(REDIRECT_TARGETS),
    to: z.string().min(1).optional(),
    code: z
      .union([z.literal(301), z.literal(302), z.literal(303), z.literal(307), z.literal(308)])
      .optional(),
  }),
  z.strictObject({ ...base, kind: z.literal('regenerate') }),
  z.strictObject({ ...base, kind: z.literal('ignorePage') }),
  z.strictObject({ ...base, kind: z.literal('noValidators') }),
  z.strictObject({ ...base, kind: z.literal('capPageSize'), rows: positiveInt }),
  z.strictObject({ ...base, kind: z.literal('emptyPage'), at: z.array(positiveInt).min(1) }),
]);

/** One fault switch; see {@link FAULT_SPEC_SCHEMA} for the kinds. */
export type FaultSpec = z.output<typeof FAULT_SPEC_SCHEMA>;
/** The kind of a fault. */
export type FaultKind = FaultSpec['kind'];
/** The fault of kind `K`. */
export type FaultOf<K extends FaultKind> = Extract<FaultSpec, { kind: K }>;

/** The endpoints where each kind makes sense (`undefined`: every endpoint). */
export const FAULT_APPLIES_TO: Partial<Record<FaultKind, readonly PublicEndpoint[]>> = {
  malformed: ['ndjson'],
  csvWart: ['csv'],
  giant: ['ndjson', 'csv'],
  duplicates: ['ndjson', 'csv'],
  regenerate: ['ndjson', 'csv'],
  ignorePage: ['csv', 'list'],
  noValidators: ['ndjson', 'csv', 'stats'],
  capPageSize: ['csv'],
  emptyPage: ['csv'],
};

/**
 * Checks a fault given as JSON data. `redirect` `crossOrigin` needs `to`; a kind aimed at an endpoint where
 * it cannot apply (e.g. `malformed` on `list`) is refused rather than silently ignored.
 *
 * @returns the fault, or a readable problem
 */
export function checkFaultSpec(
  value: unknown,
): { ok: true; fault: FaultSpec } | { ok: false; message: string } {
  const parsed = FAULT_SPEC_SCHEMA.safeParse(value);
  if (!parsed.success) {
    const message = parsed.error.issues
      .map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message))
      .join('; ');
    return { ok: false, message };
  }
  const fault = parsed.data;
  const allowed = FAULT_APPLIES_TO[fault.kind];
  if (allowed && fault.endpoint !== 'all' && !allowed.includes(fault.endpoint)) {
    return {
      ok: false,
      message: `${fault.kind} applies to ${allowed.join(', ')} (or all), not ${fault.endpoint}`,
    };
  }
  if (fault.kind === 'redirect' && fault.target === 'crossOrigin' && fault.to === undefined) {
    return { ok: false, message: 'redirect crossOrigin needs `to` (a base URL or a port)' };
  }
  if (
    fault.kind === 'redirect' &&
    fault.to !== undefined &&
    !/^\d{1,5}$/.test(fault.to) &&
    !URL.canParse(fault.to)
  ) {
    return {
      ok: false,
      message: `redirect to must be a base URL or a port, got ${JSON.stringify(fault.to)}`,
    };
  }
  return { ok: true, fault };
}

/**
 * The active fault switches of one simulator, with how often each has applied. Replacing the set resets
 * the counters. Not thread-shared: one per simulator.
 */
export class FaultSet {
  #entries: Array<{ fault: FaultSpec; used: number }> = [];

  constructor(faults: readonly FaultSpec[] = []) {
    this.replace(faults);
  }

  /** Replaces every fault (counters start again at 0). */
  replace(faults: readonly FaultSpec[]): void {
    this.#entries = faults.map((fault) => ({ fault: structuredClone(fault), used: 0 }));
  }

  /** The current faults with how many requests each has applied to. */
  list(): Array<FaultSpec & { used: number }> {
    return this.#entries.map(({ fault, used }) => ({ ...structuredClone(fault), used }));
  }

  /**
   * Takes the faults of `kind` that apply to a request to `endpoint` and still have `times` left, at most
   * `limit` of them, in the order they were set, and counts the request against each.
   */
  take<K extends FaultKind>(
    endpoint: PublicEndpoint,
    kind: K,
    limit = Number.POSITIVE_INFINITY,
  ): Array<FaultOf<K>> {
    const out: Array<FaultOf<K>> = [];
    for (const entry of this.#entries) {
      if (out.length >= limit) break;
      const { fault } = entry;
      if (fault.kind !== kind) continue;
      if (fault.endpoint !== 'all' && fault.endpoint !== endpoint) continue;
      const allowed = FAULT_APPLIES_TO[kind];
      if (allowed && !allowed.includes(endpoint)) continue;
      if (fault.times !== undefined && entry.used >= fault.times) continue;
      entry.used++;
      out.push(fault as FaultOf<K>);
    }
    return out;
  }
}
