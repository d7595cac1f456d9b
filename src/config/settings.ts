import { z } from 'zod';
import { autoMemoryLimit, autoReadMemoryLimit } from './machine-memory.js';
import { MODELLED_KEYS, WIRE_FIELDS } from '../schema/wire-format.js';
import { metricKeys } from '../schema/flatten-stats.js';

/**
 * One configurable setting: its config key, environment variable, zod schema (which also coerces the
 * env string), default and the sentence the configuration table of docs/configuration.md shows. That table
 * is generated from this list (`reports-sync config --markdown`), so the two cannot drift.
 */
export interface SettingDef<S extends z.ZodType = z.ZodType> {
  env: string;
  schema: S;
  doc: string;
  /** How a user writes an allowed value, for error messages ("an integer from 1 to 1000000"). */
  allowed: string;
  /** The command-line flag that sets it, when not `--<kebab-case key>` (error messages name it). */
  flag?: string;
  /** The default as the docs show it, when the value depends on the machine (`auto`). */
  shownDefault?: string;
  /** A former name of the variable, still read (with a warning naming `env`) when `env` is not set. */
  formerEnv?: string;
  /** Its value is a secret: never printed (`reports-sync config`, error messages), see util/redact.ts. */
  secret?: boolean;
}

// Text is read as a number only when it is written as a decimal one (`1e6`, `10.0`, `.5` are): a blank
// value or `0x10` is refused, not taken for 0 or 16 as `Number()` would.
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const numberText = (v: unknown) =>
  typeof v === 'string' ? (DECIMAL.test(v.trim()) ? Number(v.trim()) : NaN) : v;
const int = (min: number, max: number) => z.preprocess(numberText, z.number().int().min(min).max(max));
const ratio = z.preprocess(numberText, z.number().min(0).max(1));
// A size as DuckDB's settings take it (`memory_limit`).
/** Where the NDJSON export is asked first: its path is not shown upstream (docs/upstream-contract.md). */
export const DEFAULT_NDJSON_PATH = '/api/v1/public/reports.ndjson';

// The report fields REPORTS_FIELD_NAMES may name (schema/wire-format.ts: WIRE_FIELDS, and the coordinates).
const FIELDS = [...new Set<string>([...WIRE_FIELDS, 'lat', 'lng'])];

// A coordinate mapped to one of its own aliases (`lng=long`, as Open311 names it) is read so anyway: no
// mapping is needed, and none is refused.
const COORDINATE_ALIASES: Readonly<Record<string, readonly string[]>> = {
  lat: ['lat', 'latitude'],
  lng: ['lng', 'lon', 'long', 'longitude'],
};

/** Why a REPORTS_FIELD_NAMES value is refused, or undefined when it is a list of `field=name` pairs. */
function fieldNamesProblem(text: string): string | undefined {
  const seen = new Set<string>();
  for (const pair of text.split(',').map((p) => p.trim())) {
    if (pair === '') continue;
    const [field, name, more] = pair.split('=').map((p) => p.trim());
    if (more !== undefined || !field || !name) return `"${pair}" is not field=name`;
    if (!FIELDS.includes(field)) return `"${field}" is no report field (one of ${FIELDS.join(', ')})`;
    if (MODELLED_KEYS.has(name) && !COORDINATE_ALIASES[field]?.includes(name)) {
      return `"${name}" is a report field's own name: it needs no mapping`;
    }
    if (seen.has(name)) return `"${name}" is mapped twice`;
    seen.add(name);
  }
  return undefined;
}

const duckdbSize = z.string().regex(/^\d+(\.\d+)?\s*(KB|MB|GB|KiB|MiB|GiB)$/i);
const urlPath = z.string().regex(/^\/[^\s?#]*$/, 'must start with / and hold no query');
const boolish = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no'])])
  .transform((v) => v === true || v === 'true' || v === '1' || v === 'yes');

/** Every setting of reports-sync, keyed by its config name. Defaults live in the schemas. */
export const SETTINGS = {
  baseUrl: {
    env: 'REPORTS_BASE_URL',
    schema: z
      .url({ protocol: /^https?$/ })
      .refine((u) => !u.includes('#'), 'must hold no fragment (#)')
      .transform((u) => u.replace(/\/+$/, ''))
      .optional(),
    allowed: 'an http(s) URL without fragment, such as https://reports.example.org',
    doc: 'Upstream base URL (the public API lives under `/api/v1/public`). Unset: `npm start` runs the bundled simulator.',
  },
  warehouse: {
    env: 'REPORTS_WAREHOUSE',
    schema: z.string().min(1).default('data/warehouse.duckdb'),
    allowed: 'a file path',
    doc: 'DuckDB warehouse file.',
  },
  apiKey: {
    env: 'REPORTS_API_KEY',
    secret: true,
    schema: z.string().min(1).optional(),
    allowed: 'a non-empty string',
    doc: 'Optional partner key, sent as `X-API-Key`. Never logged, never sent to another origin.',
  },
  ndjsonPath: {
    env: 'REPORTS_NDJSON_PATH',
    schema: urlPath.default(DEFAULT_NDJSON_PATH),
    allowed: 'a path starting with /',
    doc:
      'Path of the NDJSON export (not shown upstream: docs/upstream-contract.md). Unset, and the default ' +
      'path answering 404, a sync asks `/api/v1/public/reports.jsonl`, `.ndjson.gz`, `?format=ndjson` and the ' +
      'list path asked for `application/x-ndjson`, and logs where it found the export.',
  },
  csvPath: {
    env: 'REPORTS_CSV_PATH',
    schema: urlPath.default('/api/v1/public/reports.csv'),
    allowed: 'a path starting with /',
    doc: 'Path of the paged CSV export.',
  },
  statsPath: {
    env: 'REPORTS_STATS_PATH',
    schema: urlPath.default('/api/v1/public/reports/stats'),
    allowed: 'a path starting with /',
    doc: 'Path of the aggregate counters.',
  },
  statsTotalPath: {
    env: 'REPORTS_STATS_TOTAL_PATH',
    schema: z
      .string()
      .refine((path) => metricKeys(path) !== undefined)
      .default('total'),
    allowed: 'a metric name as stats_values writes it, e.g. total, data.count, 0.total or ["reports.total"]',
    doc: 'Where the total of published reports is in the `/stats` body (its counters are not shown): a metric name as `stats_values` writes it (dotted keys, array indices, a key holding a dot as `["a.b"]`).',
  },
  statsMaxValues: {
    env: 'REPORTS_STATS_MAX_VALUES',
    schema: int(1, 10_000_000).default(10_000),
    allowed: 'an integer from 1 to 10000000',
    doc: 'Most numeric leaves of one `/stats` body written to `stats_values` (in body order), so a body of many counters does not add as many rows every run; the body itself is kept whole in `stats_snapshots`, and the run warns with the count left out. The total is read from the body, whatever this cut.',
  },
  fieldNames: {
    env: 'REPORTS_FIELD_NAMES',
    schema: z
      .string()
      .trim()
      .default('')
      .refine((text) => fieldNamesProblem(text) === undefined, {
        error: (issue) => fieldNamesProblem(String(issue.input)) ?? 'invalid',
      }),
    shownDefault: '(none)',
    allowed:
      'field=upstream_name pairs, comma-separated, e.g. id=service_request_id,createdAt=requested_datetime',
    doc:
      "The upstream's names of report fields (not shown upstream), as `field=name` pairs: " +
      '`id=service_request_id,createdAt=requested_datetime,destination=agency_responsible`. A field is one of ' +
      `${FIELDS.join(', ')}. Names in another case or style (\`created_at\`, \`ID\`) are read without it.`,
  },
  sourceTimeZone: {
    env: 'REPORTS_SOURCE_TIME_ZONE',
    schema: z
      .string()
      .refine((zone) => isTimeZone(zone))
      .optional(),
    allowed: 'an IANA time zone such as America/New_York or Europe/Berlin',
    doc:
      'The time zone of upstream timestamps written without an offset (`2024-04-16T03:03:15.000`, as Socrata ' +
      'exports write them, or `12/25/2013 11:59:08 PM`, as its portal CSV downloads do: month first, with ' +
      'AM/PM). Unset: such a timestamp is quarantined (the instant is ambiguous). A wall time a ' +
      'daylight-saving change repeats is its first instant; one it skips is read with the offset before it.',
  },
  csvPageSize: {
    env: 'REPORTS_CSV_PAGE_SIZE',
    flag: '--page-size', // of `sync`
    schema: int(1, 1_000_000).default(1000),
    allowed: 'an integer from 1 to 1000000',
    doc: 'Rows per CSV page (`pageSize`).',
  },
  csvPageParam: {
    env: 'REPORTS_CSV_PAGE_PARAM',
    schema: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .default('page'),
    allowed: 'a query parameter name',
    doc: 'Name of the page parameter of the CSV export.',
  },
  csvFirstPage: {
    env: 'REPORTS_CSV_FIRST_PAGE',
    schema: int(0, 1).default(1),
    allowed: '0 or 1',
    doc: 'Number of the first page of the CSV export: 1, or 0 for a server that counts pages from 0.',
  },
  csvMaxPages: {
    env: 'REPORTS_CSV_MAX_PAGES',
    schema: int(1, 10_000_000).default(100_000),
    allowed: 'an integer from 1 to 10000000',
    doc: 'A CSV export with more pages than this fails, a paged NDJSON export stops incomplete (runaway paging guard).',
  },
  listPath: {
    env: 'REPORTS_LIST_PATH',
    schema: urlPath.default('/api/v1/public/reports'),
    allowed: 'a path starting with /',
    doc: 'Path of the list endpoint the `recent` source reads (newest reports first, docs/upstream-contract.md rule 3).',
  },
  recentPageSize: {
    env: 'REPORTS_RECENT_PAGE_SIZE',
    schema: int(1, 1_000_000).default(1000),
    allowed: 'an integer from 1 to 1000000',
    doc: 'Reports per list page (`pageSize`) of the `recent` source; default the largest the simulator accepts.',
  },
  recentMaxPages: {
    env: 'REPORTS_RECENT_MAX_PAGES',
    schema: int(1, 1_000_000).default(100),
    allowed: 'an integer from 1 to 1000000',
    doc: 'A `recent` run reads at most this many list pages, then warns and leaves the gap to the next full export.',
  },
  conditionalExports: {
    env: 'REPORTS_CONDITIONAL_EXPORTS',
    schema: boolish.default(true),
    allowed: 'true or false',
    doc: 'Full exports send `If-None-Match`/`If-Modified-Since` with the validators of the last complete run; a 304 ends the run as unchanged.',
  },
  schemaContract: {
    env: 'REPORTS_SCHEMA_CONTRACT',
    schema: z.enum(['evolve', 'freeze']).default('evolve'),
    allowed: 'evolve or freeze',
    doc: 'On schema drift (a new `status`/`destination` value, a new field, a changed JSON type): `evolve` records it and merges; `freeze` fails the run before merging.',
  },
  publishMinIntervalMs: {
    env: 'REPORTS_PUBLISH_MIN_INTERVAL_MS',
    formerEnv: 'REPORTS_PUBLISH_MIN_INTERVAL',
    schema: int(0, 86_400_000).default(3_600_000),
    allowed: 'milliseconds from 0 to 86400000',
    doc: 'The daemon republishes its snapshot at most this often (ms; 0: after every job that changed something); a job that changed nothing never republishes. The daemon’s reader serves the live warehouse meanwhile. Formerly `REPORTS_PUBLISH_MIN_INTERVAL`, still read with a warning.',
  },
  connectTimeoutMs: {
    env: 'REPORTS_CONNECT_TIMEOUT_MS',
    schema: int(1, 600_000).default(10_000),
    allowed: 'milliseconds from 1 to 600000',
    doc: 'TCP/TLS connect timeout (ms).',
  },
  headersTimeoutMs: {
    env: 'REPORTS_HEADERS_TIMEOUT_MS',
    schema: int(1, 3_600_000).default(60_000),
    allowed: 'milliseconds from 1 to 3600000',
    doc: 'Time to wait for response headers (ms).',
  },
  maxHeaderBytes: {
    env: 'REPORTS_MAX_HEADER_BYTES',
    schema: int(1_024, 16_777_216).default(16_384),
    allowed: 'bytes from 1024 to 16777216',
    doc: 'Largest response header section read (bytes, undici’s `maxHeaderSize`): an answer with larger headers fails at once with `HTTP_NETWORK`, not retried.',
  },
  bodyTimeoutMs: {
    env: 'REPORTS_BODY_TIMEOUT_MS',
    schema: int(1, 3_600_000).default(60_000),
    allowed: 'milliseconds from 1 to 3600000',
    doc: 'Longest silence between two body chunks (ms): a stalled body fails instead of hanging.',
  },
  minSpeedBytes: {
    env: 'REPORTS_MIN_SPEED_BYTES',
    schema: int(0, 1_073_741_824).default(1_024),
    allowed: 'bytes per second from 0 (off) to 1073741824',
    doc: "Slowest body accepted (bytes per second, as curl's `--speed-limit`): a body arriving slower on average over `REPORTS_MIN_SPEED_WINDOW_MS` fails with `BODY_TOO_SLOW` and is retried like a stall; 0 turns the check off.",
  },
  minSpeedWindowMs: {
    env: 'REPORTS_MIN_SPEED_WINDOW_MS',
    schema: int(100, 3_600_000).default(60_000),
    allowed: 'milliseconds from 100 to 3600000',
    doc: "The window `REPORTS_MIN_SPEED_BYTES` is averaged over (ms, as curl's `--speed-time`); time our side spends not reading (its buffer full) does not count.",
  },
  exportDeadlineMs: {
    env: 'REPORTS_EXPORT_DEADLINE_MS',
    schema: int(1, 86_400_000).default(1_800_000),
    allowed: 'milliseconds from 1 to 86400000',
    doc: 'Longest time one NDJSON export request may take, headers and body (ms): a body trickling in forever fails with `DEADLINE_EXCEEDED` (not retried).',
  },
  pageDeadlineMs: {
    env: 'REPORTS_PAGE_DEADLINE_MS',
    schema: int(1, 86_400_000).default(120_000),
    allowed: 'milliseconds from 1 to 86400000',
    doc: 'Longest time one CSV page, list page (`recent`) or `/stats` request may take, headers and body (ms); `DEADLINE_EXCEEDED` (not retried) past it.',
  },
  retries: {
    env: 'REPORTS_RETRIES',
    schema: int(0, 100).default(5),
    allowed: 'an integer from 0 to 100',
    doc: 'Retries of a request or export after 408/425/429/500/502/503/504, resets and timeouts.',
  },
  retryBaseMs: {
    env: 'REPORTS_RETRY_BASE_MS',
    schema: int(0, 600_000).default(500),
    allowed: 'milliseconds from 0 to 600000',
    doc: 'First backoff delay (ms); doubles per attempt, jittered; `Retry-After` wins when longer.',
  },
  retryMaxTimeMs: {
    env: 'REPORTS_RETRY_MAX_TIME_MS',
    schema: int(0, 86_400_000).default(300_000),
    allowed: 'milliseconds from 0 to 86400000',
    doc: 'Total time budget for retries of one request or export (ms).',
  },
  maxRedirects: {
    env: 'REPORTS_MAX_REDIRECTS',
    schema: int(0, 20).default(5),
    allowed: 'an integer from 0 to 20',
    doc: 'Redirects followed per request.',
  },
  batchSize: {
    env: 'REPORTS_BATCH_SIZE',
    schema: int(1, 1_000_000).default(122_880),
    allowed: 'an integer from 1 to 1000000',
    doc: 'Records staged per batch (one transaction and checkpoint per batch; CSV commits whole pages once a batch has gathered); the default is one DuckDB row group, which is written compressed to the file instead of through the WAL.',
  },
  decodeWorkers: {
    env: 'REPORTS_DECODE_WORKERS',
    schema: int(0, 64).default(2),
    allowed: 'an integer from 0 to 64',
    doc: 'Worker threads that parse, validate and serialise records: NDJSON in blocks of ~1 MiB, CSV a page at a time (0: on the main thread). On 2 cores the two workers keep both cores busy through the reading of a sync (measured: 1M-record NDJSON sync ~24 s with 0, ~20 s with 1 or 2).',
  },
  maxRejectRatio: {
    env: 'REPORTS_MAX_REJECT_RATIO',
    schema: ratio.default(0.05),
    allowed: 'a number from 0 to 1',
    doc: 'A run whose rejected/read ratio exceeds this fails and merges nothing.',
  },
  maxRecordBytes: {
    env: 'REPORTS_MAX_RECORD_BYTES',
    schema: int(1024, 1_073_741_824).default(8 * 1024 * 1024),
    allowed: 'bytes from 1024 to 1073741824',
    doc: 'Longest NDJSON line / CSV record (bytes); a longer one is quarantined, not loaded into memory.',
  },
  rejectRawMaxBytes: {
    env: 'REPORTS_REJECT_RAW_MAX_BYTES',
    schema: int(64, 16 * 1024 * 1024).default(64 * 1024),
    allowed: 'bytes from 64 to 16777216',
    doc: 'Raw text kept per quarantined record (bytes); longer text is cut and marked truncated.',
  },
  extraMaxDepth: {
    env: 'REPORTS_EXTRA_MAX_DEPTH',
    schema: int(1, 10_000).default(64),
    allowed: 'an integer from 1 to 10000',
    doc: "Deepest nesting of objects/arrays in a record's unknown fields; a deeper record is quarantined.",
  },
  extraMaxKeys: {
    env: 'REPORTS_EXTRA_MAX_KEYS',
    schema: int(1, 1_000_000).default(1000),
    allowed: 'an integer from 1 to 1000000',
    doc: "Most keys and array items in a record's unknown fields, nested ones included; a record with more is quarantined.",
  },
  extraMaxBytes: {
    env: 'REPORTS_EXTRA_MAX_BYTES',
    schema: int(64, 1_073_741_824).default(65_536),
    allowed: 'bytes from 64 to 1073741824',
    doc: "Largest size of a record's unknown fields as JSON (bytes; as stored, numbers as sent); a larger record is quarantined.",
  },
  tombstoneMinShare: {
    env: 'REPORTS_TOMBSTONE_MIN_SHARE',
    schema: ratio.default(0.9),
    allowed: 'a number from 0 to 1',
    doc: 'Tombstones are only inferred when a full export holds at least this share of current rows.',
  },
  statsDiffWarn: {
    env: 'REPORTS_STATS_DIFF_WARN',
    schema: int(0, 1_000_000_000).default(0),
    allowed: 'a non-negative integer',
    doc: 'Warn when upstream `/stats` total and the warehouse total differ by more than this many reports; an export whose count differs from `/stats` total by more infers no tombstones.',
  },
  duckdbMemoryLimit: {
    env: 'REPORTS_DUCKDB_MEMORY_LIMIT',
    schema: z
      .union([z.literal('auto'), duckdbSize])
      .default('auto')
      .transform((v) => (v === 'auto' ? autoMemoryLimit() : v)),
    shownDefault: 'auto',
    allowed: 'auto, or a DuckDB size such as 256MiB or 1GB',
    doc: "DuckDB `memory_limit` (bounds the warehouse side of a sync's merge and the reader; what does not fit spills to `<warehouse>.tmp` beside the warehouse). `auto`: an eighth of the machine's (or the container's) memory, from 128MiB to 512MiB (a 2 GiB container gets 256MiB; a 1 GiB one 128MiB, where the publish after a 4M-report nightly run takes ~2.5 × as long as at 512MiB: docs/performance.md, \"Small machines\"); at 128MiB analysts' queries (read_csv of a large export) ran out of memory; a sync's reading has its own limit (`REPORTS_DUCKDB_READ_MEMORY_LIMIT`). A run that still runs out fails with `WAREHOUSE_OUT_OF_MEMORY`, naming the setting to raise.",
  },
  duckdbReadMemoryLimit: {
    env: 'REPORTS_DUCKDB_READ_MEMORY_LIMIT',
    schema: z
      .union([z.literal('auto'), duckdbSize])
      .default('auto')
      .transform((v) => (v === 'auto' ? autoReadMemoryLimit() : v)),
    shownDefault: 'auto',
    allowed: 'auto, or a DuckDB size such as 128MiB or 1GB',
    doc: "DuckDB `memory_limit` while `reports-sync sync` reads an export (restored for the merge, which needs `REPORTS_DUCKDB_MEMORY_LIMIT` for its joins; never raises it). At least 16 × `REPORTS_MAX_RECORD_BYTES`, so the longest record allowed still stages. The daemon (`reports-sync run`) keeps the full limit: its reader shares the instance (tried at 4M: the nightly run in the daemon ran out of memory at 256MiB while staging, with the reader's exports sharing the limit). Reading only appends to staging, yet DuckDB keeps the blocks it wrote cached up to its limit: at 128MiB a sync of 4M reports peaked at ~540 instead of ~660 MiB RSS in the same time (measured); a 1M sync's peak is its merge's either way. `auto`: a sixteenth of the machine's (or the container's) memory, from 128MiB to 256MiB (a 10M-report re-read ran out at 128MiB: docs/performance.md, \"Scale\").",
  },
  duckdbThreads: {
    env: 'REPORTS_DUCKDB_THREADS',
    schema: int(1, 256).default(1),
    allowed: 'an integer from 1 to 256',
    doc: 'DuckDB `threads`. On 2 cores the decode workers keep both busy during a sync: 1 DuckDB thread cut its CPU by ~25% and was not slower (measured); raise it for a reader serving large exports.',
  },
  duckdbMergeThreads: {
    env: 'REPORTS_DUCKDB_MERGE_THREADS',
    schema: int(0, 256).default(0),
    allowed: 'an integer from 0 to 256 (0: one per core)',
    doc: "DuckDB `threads` while a run merges (the decode workers are idle then), restored afterwards; never below `REPORTS_DUCKDB_THREADS`. 0 takes the machine's cores. On 2 cores the first merge of 1M reports took ~9 s with 1 thread, ~5 s with 2 (measured).",
  },
  mergeSliceRows: {
    env: 'REPORTS_MERGE_SLICE_ROWS',
    schema: int(0, 1_000_000_000).default(0),
    allowed: 'an integer from 0 to 1000000000 (0: from the memory limit)',
    doc: "Reports a merge handles per slice when a run staged many (a first load, a CSV run on a warehouse the NDJSON export filled): the staged ids are split by a hash into slices of about this many, each with joins that fit `REPORTS_DUCKDB_MEMORY_LIMIT`, all in the run's one transaction. 0: 2,000 per MiB of the limit, less the memory DuckDB holds for the table's deleted-row markers (~7.5 bytes a stored report once a night's uniform changes spread deletes over it: 36 MiB at 4M, ~300–350 MiB at 40M), at most 1M, so that a slice needs the same memory whatever the warehouse's size (a CSV run on a 4M-report warehouse the NDJSON export filled merged slices of 400,000 at 128MiB and 800,000 at 256MiB, and ran out of memory with 500,000 and 1M: the ratio keeps about half of that). Results do not depend on it.",
  },
  port: {
    env: 'REPORTS_PORT',
    schema: int(0, 65_535).default(8080),
    allowed: 'a TCP port from 0 to 65535 (0 = a free port)',
    doc: 'Port of the reader (`reports-sync serve`; flag `--port`).',
  },
  host: {
    env: 'REPORTS_HOST',
    schema: z
      .string()
      .regex(/^[A-Za-z0-9.:_-]+$/, 'must be a host name or IP address')
      .default('127.0.0.1'),
    allowed: 'a host name or IP address such as 127.0.0.1 or 0.0.0.0',
    doc: 'Interface the reader binds (flag `--host`); `0.0.0.0` serves every interface.',
  },
  readerListMaxPageSize: {
    env: 'REPORTS_READER_LIST_MAX_PAGE_SIZE',
    schema: int(1, 1000).default(1000),
    allowed: 'an integer from 1 to 1000',
    doc: 'Largest `pageSize` the reader accepts on `/reports` (at most the public maximum, 1000).',
  },
  readerCsvMaxPageSize: {
    env: 'REPORTS_READER_CSV_MAX_PAGE_SIZE',
    schema: int(1, 10_000).default(10_000),
    allowed: 'an integer from 1 to 10000',
    doc: 'Largest `pageSize` the reader accepts on `/reports.csv` (at most the public maximum, 10000).',
  },
  readerQueryTimeoutMs: {
    env: 'REPORTS_READER_QUERY_TIMEOUT_MS',
    schema: int(1, 600_000).default(10_000),
    allowed: 'milliseconds from 1 to 600000',
    doc: 'A warehouse query (or one result chunk of an export) running longer is interrupted: 503 (ms).',
  },
  readerIdleTimeoutMs: {
    env: 'REPORTS_READER_IDLE_TIMEOUT_MS',
    schema: int(1000, 3_600_000).default(60_000),
    allowed: 'milliseconds from 1000 to 3600000',
    doc: 'A reader connection with no traffic for this long is closed, also a client that stops reading an export (ms).',
  },
  readerHeadersTimeoutMs: {
    env: 'REPORTS_READER_HEADERS_TIMEOUT_MS',
    schema: int(100, 600_000).default(10_000),
    allowed: 'milliseconds from 100 to 600000',
    doc: 'A client must send its whole request head within this time (ms): a slow-headers client is cut off.',
  },
  readerRequestTimeoutMs: {
    env: 'REPORTS_READER_REQUEST_TIMEOUT_MS',
    schema: int(100, 3_600_000).default(30_000),
    allowed: 'milliseconds from 100 to 3600000',
    doc: 'A client must send its whole request within this time (ms); the response may take longer.',
  },
  readerCacheBytes: {
    env: 'REPORTS_READER_CACHE_BYTES',
    schema: int(0, 4_294_967_296).default(32 * 1024 * 1024),
    allowed: 'bytes from 0 to 4294967296',
    doc: 'Memory for cached list pages of the current data state (bytes; 0 = no cache). A new successful run empties it.',
  },
  readerValidatorsTtlMs: {
    env: 'REPORTS_READER_VALIDATORS_TTL_MS',
    schema: int(0, 60_000).default(1000),
    allowed: 'milliseconds from 0 to 60000',
    doc: 'The list re-reads the last successful run (its ETag) at most this often; after a run its answers may lag this long (ms; 0 = every request).',
  },
  readerConnections: {
    env: 'REPORTS_READER_CONNECTIONS',
    schema: int(1, 64).default(4),
    allowed: 'an integer from 1 to 64',
    doc: 'DuckDB connections the reader uses at once for lists, stats and `/healthz` reads; further requests wait for one.',
  },
  readerExportConnections: {
    env: 'REPORTS_READER_EXPORT_CONNECTIONS',
    schema: int(1, 64).default(2),
    allowed: 'an integer from 1 to 64',
    doc: 'DuckDB connections the reader uses at once to write export bodies (NDJSON, GeoJSON, CSV pages), apart from the list’s, so long exports never hold up lists; further exports wait for one.',
  },
  readerAcquireTimeoutMs: {
    env: 'REPORTS_READER_ACQUIRE_TIMEOUT_MS',
    schema: int(1, 600_000).default(2000),
    allowed: 'milliseconds from 1 to 600000',
    doc: 'A request that waits this long for a free DuckDB connection is answered 503 with `Retry-After` (ms).',
  },
  publicUrl: {
    env: 'REPORTS_PUBLIC_URL',
    schema: z
      .url({ protocol: /^https?$/ })
      .refine((u) => {
        const url = new URL(u);
        return url.search === '' && url.hash === '' && url.username === '' && url.password === '';
      }, 'no query, fragment or credentials: links append the API path to it')
      .refine(
        (u) => !/\/api\/v1\/public\/*$/.test(new URL(u).pathname),
        "the reader's root, without /api/v1/public (each link adds it)",
      )
      .transform((u) => u.replace(/\/+$/, ''))
      .optional(),
    allowed:
      "an http(s) URL of the reader's root such as https://reports.example.org (no query, no /api/v1/public)",
    doc: 'Public base URL of the reader (behind a proxy): absolute `Link` headers start with it. Unset: links are relative.',
  },
  readerTrustProxy: {
    env: 'REPORTS_READER_TRUST_PROXY',
    schema: boolish.default(false),
    allowed: 'true or false',
    doc: 'Trust `X-Forwarded-Proto`/`X-Forwarded-Host`/`X-Forwarded-For` (a reverse proxy in front); absolute links then follow them.',
  },
  readerCorsOrigins: {
    env: 'REPORTS_READER_CORS_ORIGINS',
    schema: z.string().min(1).default('*'),
    allowed: '* or a comma-separated list of origins such as https://dash.example.org',
    doc: 'Origins allowed to read the reader from a browser (CORS); `*` = any (a public read API).',
  },
  readerSpoolBytes: {
    env: 'REPORTS_READER_SPOOL_BYTES',
    schema: int(0, 1_099_511_627_776).default(1024 * 1024 * 1024),
    allowed: 'bytes from 0 to 1099511627776',
    doc: 'Disk for export bodies (NDJSON, GeoJSON, CSV pages) of the current data state, reused by later requests (bytes; 0 = none kept), in a folder `reports-sync-reader-<host and PID namespace>-<pid>-…` of the OS temp folder. A new data state removes them; the folder of a reader that was killed is removed by the next reader of the same host and PID namespace that spools.',
  },
  readerMaxAgeSeconds: {
    env: 'REPORTS_READER_MAX_AGE_S',
    schema: int(0, 86_400).default(0),
    allowed: 'seconds from 0 to 86400',
    doc: 'Freshness of public answers for caches: 0 = `Cache-Control: no-cache` (revalidate with `ETag`), else `max-age`.',
  },
  logLevel: {
    env: 'REPORTS_LOG_LEVEL',
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    allowed: 'one of fatal, error, warn, info, debug, trace, silent',
    doc: 'Log level (pino).',
  },
  logPretty: {
    env: 'REPORTS_LOG_PRETTY',
    schema: boolish.optional(),
    allowed: 'true or false',
    doc: 'Force pretty (true) or JSON (false) logs; default: pretty on a TTY.',
  },
  // PostgreSQL as the serving warehouse (docs/deployment.md, "Serving from PostgreSQL").
  postgresUrl: {
    env: 'REPORTS_POSTGRES_URL',
    flag: '--postgres',
    secret: true,
    schema: z
      .string()
      .refine((v) => URL.canParse(v) && /^postgres(ql)?:$/.test(new URL(v).protocol), 'a postgres:// URL')
      .optional(),
    allowed:
      'a postgres:// or postgresql:// URL, e.g. postgres://user:password@db.example.org:5432/reports?sslmode=require',
    doc: 'PostgreSQL to publish the warehouse to after every run that changed it; with `serve`, the PostgreSQL the API is served from instead of the warehouse file (libpq URL parameters such as `sslmode` work). Unset: no PostgreSQL publish. Its password is never printed.',
  },
  postgresSchema: {
    env: 'REPORTS_POSTGRES_SCHEMA',
    schema: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'letters, digits and _ (at most 63), not starting with a digit')
      .default('reports_sync'),
    allowed: 'a PostgreSQL schema name: letters, digits and _, at most 63, not starting with a digit',
    doc: 'The PostgreSQL schema the serving tables and views live in (created and migrated by the publish).',
  },
  // Alerts (docs/deployment.md, "Alerts"): webhooks, and the thresholds of the incidents.
  alertWebhookUrls: {
    env: 'REPORTS_ALERT_WEBHOOK_URL',
    secret: true,
    schema: z
      .string()
      .refine(
        (v) => webhookUrlList(v).every((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol)),
        'http(s) URLs separated by commas or spaces',
      )
      .optional(),
    allowed: 'one or more http(s) URLs separated by commas or spaces',
    doc: 'Webhooks that receive every alert event (several: separated by commas or spaces), signed per the Standard Webhooks spec with `REPORTS_ALERT_WEBHOOK_SECRET`; a Slack incoming webhook (hooks.slack.com) gets a Slack message instead. Printed with its path redacted.',
  },
  alertWebhookSecret: {
    env: 'REPORTS_ALERT_WEBHOOK_SECRET',
    secret: true,
    schema: z
      .string()
      .regex(/^(whsec_)?[A-Za-z0-9+/]{16,}={0,2}$/, 'whsec_ then base64')
      .optional(),
    allowed: 'whsec_ followed by base64 (e.g. whsec_$(openssl rand -base64 32))',
    doc: 'Signing secret of the webhooks (Standard Webhooks: `whsec_` + base64); required when a webhook is not a Slack one. Never printed.',
  },
  alertWebhookTimeoutMs: {
    env: 'REPORTS_ALERT_WEBHOOK_TIMEOUT_MS',
    schema: int(100, 600_000).default(10_000),
    allowed: 'milliseconds from 100 to 600000',
    doc: 'Longest time one webhook delivery attempt may take (ms); a slower receiver counts as a failed attempt.',
  },
  alertWebhookRetries: {
    env: 'REPORTS_ALERT_WEBHOOK_RETRIES',
    schema: int(0, 20).default(5),
    allowed: 'an integer from 0 to 20',
    doc: 'Retries of a webhook delivery after a network error, a timeout, 408, 429 or 5xx, with backoff doubling from 1 s; each attempt is recorded in `alert_deliveries`.',
  },
  alertDrainMs: {
    env: 'REPORTS_ALERT_DRAIN_MS',
    schema: int(0, 600_000).default(5_000),
    allowed: 'milliseconds from 0 to 600000',
    doc: 'How long the daemon’s shutdown and a one-shot `sync` wait for webhook deliveries still under way (ms); those not done stay `pending` and the daemon sends them at its next start.',
  },
  alertCheckIntervalMs: {
    env: 'REPORTS_ALERT_CHECK_INTERVAL_MS',
    schema: int(100, 3_600_000).default(60_000),
    allowed: 'milliseconds from 100 to 3600000',
    doc: 'How often the daemon’s watchdog checks each job’s freshness and the publish lag (ms), whether or not jobs run.',
  },
  alertGapSnapshots: {
    env: 'REPORTS_ALERT_GAP_SNAPSHOTS',
    schema: int(1, 1000).default(3),
    allowed: 'an integer from 1 to 1000',
    doc: 'A `reconciliation.gap` alert opens when this many consecutive `/stats` comparisons differ by more than `REPORTS_STATS_DIFF_WARN` (not on one noisy reading); it resolves with the first one within it.',
  },
  alertQualityFlags: {
    env: 'REPORTS_ALERT_QUALITY_FLAGS',
    schema: int(0, 1_000_000_000).default(1),
    allowed: 'an integer from 0 (off) to 1000000000',
    doc: 'A run that flags at least this many impossible values (data-quality flags) raises `quality.flagged`; 0 turns it off.',
  },
  alertPublishLagMs: {
    env: 'REPORTS_ALERT_PUBLISH_LAG_MS',
    schema: int(1000, 604_800_000).default(7_200_000),
    allowed: 'milliseconds from 1000 to 604800000',
    doc: 'A publish target (the published snapshot) whose copy misses changes committed longer ago than this raises `publish.lagging` (ms; default twice the default `REPORTS_PUBLISH_MIN_INTERVAL_MS`).',
  },
  // The daemon (`reports-sync run`, docs/reader.md) and progress reporting.
  timezone: {
    env: 'REPORTS_TZ',
    schema: z.string().refine(isTimeZone, 'an IANA time zone').default('UTC'),
    allowed: 'an IANA time zone such as UTC or Europe/Berlin',
    doc: 'Time zone of the job schedules of `run` (cron expressions in `jobs/`).',
  },
  shutdownGraceMs: {
    env: 'REPORTS_SHUTDOWN_GRACE_MS',
    schema: int(0, 3_600_000).default(8_000),
    allowed: 'milliseconds from 0 to 3600000',
    doc: 'On SIGTERM/SIGINT, how long a running sync may go on before it is aborted (ms); below Docker’s 10 s stop timeout.',
  },
  progressIntervalMs: {
    env: 'REPORTS_PROGRESS_INTERVAL_MS',
    schema: int(1, 3_600_000).default(5_000),
    allowed: 'milliseconds from 1 to 3600000',
    doc: 'Interval of the progress log lines of a long sync when stderr is not a terminal (ms).',
  },
} satisfies Record<string, SettingDef>;

export type SettingKey = keyof typeof SETTINGS;

/** The URLs of `REPORTS_ALERT_WEBHOOK_URL`: separated by commas or white space, empty parts ignored. */
export function webhookUrlList(value: string | undefined): string[] {
  return (value ?? '').split(/[\s,]+/).filter((u) => u !== '');
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
