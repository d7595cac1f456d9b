/**
 * What to do again after a failure, when anything:
 * - `request`: the same request may succeed later (429/5xx, a reset connection, a corrupt compressed body);
 *   retried with backoff where it was made (a CSV page by its own retries, the NDJSON export by the run's);
 * - `export`: the export must be read again from its start (its body was cut, or it changed while read);
 *   the runner discards what the attempt staged, never splicing attempts (docs/how-a-sync-works.md);
 * - `none`: retrying cannot help (bad configuration, a bug, a refused upstream answer).
 */
export type RetryScope = 'request' | 'export' | 'none';

/** One error code: what it means and the retry scope of an instance that says it is retryable. */
export interface ErrorCodeInfo {
  meaning: string;
  /** The scope of a retryable instance of this code (`none`: never retryable). */
  retry: RetryScope;
}

/**
 * Every code a {@link SyncError} carries (stable, grep-able; `sync_runs.error.code`). docs/error-codes.md
 * is generated from this table (`node scripts/error-codes.mjs`; CI checks it is current).
 */
export const ERROR_CODES = {
  BODY_TOO_SLOW: {
    meaning: 'A response body arrived slower than the minimum transfer rate (REPORTS_MIN_SPEED_BYTES).',
    retry: 'request',
  },
  BODY_TRUNCATED: { meaning: 'A response body ended early (cut mid-line or mid-page).', retry: 'export' },
  CLI_INVALID_OPTION: {
    meaning: 'A command-line option or argument has an invalid value (an unknown option, an empty query).',
    retry: 'none',
  },
  CONFIG_INVALID: { meaning: 'A setting (environment variable or option) is invalid.', retry: 'none' },
  CONTENT_ENCODING_INVALID: { meaning: 'A compressed body cannot be decompressed.', retry: 'request' },
  CONTENT_ENCODING_UNSUPPORTED: {
    meaning: 'The body uses a Content-Encoding the client cannot decode.',
    retry: 'none',
  },
  COUNT_MISMATCH: {
    meaning: 'Records read, loaded and rejected do not add up: nothing merged (a bug).',
    retry: 'none',
  },
  CSV_HEADER_INVALID: { meaning: 'A CSV page has no usable header row.', retry: 'none' },
  CSV_INVALID_UTF8: { meaning: 'A CSV header holds bytes that are not UTF-8.', retry: 'none' },
  CSV_MAX_PAGES: { meaning: 'The CSV export still has rows past REPORTS_CSV_MAX_PAGES.', retry: 'none' },
  CSV_PAGE_TOO_LARGE: {
    meaning:
      'A CSV page holds more rows than a record sequence number can address, or more than 256 MiB (a page is read into memory whole).',
    retry: 'none',
  },
  DATASET_NOT_FOUND: { meaning: 'The simulator dataset file does not exist.', retry: 'none' },
  DEADLINE_EXCEEDED: { meaning: 'A request took longer than its deadline.', retry: 'request' },
  DECODE_FAILED: { meaning: 'A decode worker failed on a block (a bug).', retry: 'none' },
  EXPORT_CHANGED: {
    meaning: 'The paged export changed while it was read (its validator differs).',
    retry: 'export',
  },
  FAULT_SPEC_INVALID: { meaning: 'A simulator fault switch is invalid.', retry: 'none' },
  HTTP_LISTEN: { meaning: 'The daemon cannot listen on its host and port.', retry: 'none' },
  HTTP_NETWORK: {
    meaning:
      'The connection to the upstream failed (refused, reset, timed out: retried; a TLS failure such as https:// to a plain-HTTP port or a refused certificate, or response headers over REPORTS_MAX_HEADER_BYTES: not retried).',
    retry: 'request',
  },
  HTTP_STATUS: {
    meaning: 'The upstream answered with an error status (429 and 5xx are retryable).',
    retry: 'request',
  },
  INVALID_CHARSET_DATA: { meaning: 'A body is not valid in its declared charset.', retry: 'none' },
  JOB_INVALID: { meaning: 'A daemon job definition is invalid.', retry: 'none' },
  LIST_INVALID: {
    meaning:
      'A list page of the recent source is neither a JSON array of reports nor an object holding one, is over 256 MiB or is not UTF-8.',
    retry: 'request',
  },
  NDJSON_DOCUMENT_INVALID: {
    meaning:
      'The NDJSON export answered one JSON document instead of lines, and it is over 256 MiB, not UTF-8, not JSON (retried: a cut body) or holds no array of reports.',
    retry: 'request',
  },
  NDJSON_EXPORT_NOT_FOUND: {
    meaning:
      'The NDJSON export answered 404 at its default path and at the other places asked (REPORTS_NDJSON_PATH names it).',
    retry: 'none',
  },
  POSTGRES_PUBLISH_FAILED: {
    meaning:
      'The change set could not be applied to PostgreSQL (server down, refused login, lost connection): PostgreSQL stays at the last publish, the next one catches up.',
    retry: 'request',
  },
  PUBLISH_FAILED: {
    meaning:
      'The warehouse snapshot for the reader could not be published (the previous one stays); when DuckDB ran out of memory, the message names the limit to raise (REPORTS_DUCKDB_MEMORY_LIMIT).',
    retry: 'none',
  },
  READER_BUSY: {
    meaning:
      'The reader has no free warehouse connection within REPORTS_READER_ACQUIRE_TIMEOUT_MS (503, Retry-After).',
    retry: 'request',
  },
  READER_CLOSED: { meaning: 'The reader was closed while a query ran.', retry: 'none' },
  READER_LISTEN: { meaning: 'The reader cannot listen on its host and port.', retry: 'none' },
  READER_POSTGRES_UNAVAILABLE: {
    meaning:
      'The reader on PostgreSQL cannot reach its server, or the schema holds no publish yet (503, Retry-After).',
    retry: 'request',
  },
  READER_QUERY_TIMEOUT: {
    meaning: 'A reader query took longer than REPORTS_READER_QUERY_TIMEOUT_MS.',
    retry: 'none',
  },
  REDIRECT_INVALID: { meaning: 'The upstream redirected to an unusable location.', retry: 'none' },
  REDIRECT_LIMIT: {
    meaning: 'The upstream redirected more than REPORTS_MAX_REDIRECTS times.',
    retry: 'none',
  },
  REJECT_RATIO: {
    meaning: 'More records were rejected than REPORTS_MAX_REJECT_RATIO allows: nothing merged.',
    retry: 'none',
  },
  RESET_NOT_CONFIRMED: {
    meaning:
      '`reports-sync reset` was run without `--yes`: it said what it would delete and deleted nothing.',
    retry: 'none',
  },
  RUN_ABORTED: { meaning: 'The run was stopped before it finished (shutdown, Ctrl-C).', retry: 'none' },
  RUN_FAILED: { meaning: 'The run failed for a reason without a code of its own.', retry: 'none' },
  RUN_NOT_FOUND: {
    meaning: 'The run log holds no run with that id (`reports-sync runs show`).',
    retry: 'none',
  },
  RUN_INTERRUPTED: {
    meaning:
      'The process ended before the run finished (found at the next start, which raises `run.failed` for it: docs/deployment.md, "Alerts").',
    retry: 'none',
  },
  SCHEMA_FROZEN: {
    meaning: 'REPORTS_SCHEMA_CONTRACT=freeze and the run saw a new field or value: nothing merged.',
    retry: 'none',
  },
  SIMULATOR_LISTEN: { meaning: 'The simulator cannot listen on its host and port.', retry: 'none' },
  SOURCE_UNKNOWN: { meaning: 'No export source has that name.', retry: 'none' },
  SQL_ERROR: { meaning: 'A query given to `reports-sync sql` failed.', retry: 'none' },
  SQL_MULTIPLE: {
    meaning: '`sql --format csv|json` was given several statements (it prints one result).',
    retry: 'none',
  },
  STAGING_MISMATCH: {
    meaning: 'DuckDB loaded another number of rows than a batch file holds (a bug).',
    retry: 'none',
  },
  STATS_INVALID: { meaning: 'The upstream /stats answer is not the expected JSON.', retry: 'none' },
  UNEXPECTED_CONTENT_TYPE: {
    meaning: 'The upstream answered with another media type than the export.',
    retry: 'none',
  },
  UNSUPPORTED_CHARSET: { meaning: 'A body declares a charset the client cannot decode.', retry: 'none' },
  WAREHOUSE_LOCKED: { meaning: 'Another process holds the warehouse file.', retry: 'none' },
  WAREHOUSE_MISSING: { meaning: 'The warehouse file does not exist.', retry: 'none' },
  WAREHOUSE_OPEN: { meaning: 'The warehouse file cannot be opened.', retry: 'none' },
  WAREHOUSE_OUT_OF_MEMORY: {
    meaning:
      'DuckDB ran out of memory: the message names the setting to raise (REPORTS_DUCKDB_MEMORY_LIMIT or REPORTS_DUCKDB_READ_MEMORY_LIMIT).',
    retry: 'none',
  },
  WAREHOUSE_WRITE: {
    meaning: 'The warehouse cannot be written (disk full, read-only folder).',
    retry: 'none',
  },
} as const satisfies Record<string, ErrorCodeInfo>;

/** A code of {@link ERROR_CODES}. */
export type SyncErrorCode = keyof typeof ERROR_CODES;
