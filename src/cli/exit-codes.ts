import { CommanderError } from 'commander';
import type { SyncErrorCode } from '../util/error-codes.js';
import { SyncError } from '../util/errors.js';

/** Every command that ends normally: every run succeeded. */
export const EXIT_SUCCESS = 0;
/** A run failed, or an error without a usage or configuration cause ended the command. */
export const EXIT_FAILURE = 1;
/** Usage or configuration: a bad option or setting, a missing or locked warehouse, a port in use. */
export const EXIT_USAGE = 2;

/**
 * The exit status of a command ended by a `SyncError` of each code: {@link EXIT_USAGE} (2) when the
 * command cannot start as invoked and the user must change something, {@link EXIT_FAILURE} (1) otherwise.
 * A `Record` of every code, so a new code does not typecheck until it is given a status here.
 * docs/error-codes.md shows this column (scripts/error-codes.mjs).
 */
export const ERROR_EXIT_CODES: Record<SyncErrorCode, typeof EXIT_FAILURE | typeof EXIT_USAGE> = {
  BODY_TOO_SLOW: EXIT_FAILURE,
  BODY_TRUNCATED: EXIT_FAILURE,
  CLI_INVALID_OPTION: EXIT_USAGE,
  CONFIG_INVALID: EXIT_USAGE,
  CONTENT_ENCODING_INVALID: EXIT_FAILURE,
  CONTENT_ENCODING_UNSUPPORTED: EXIT_FAILURE,
  COUNT_MISMATCH: EXIT_FAILURE,
  CSV_HEADER_INVALID: EXIT_FAILURE,
  CSV_INVALID_UTF8: EXIT_FAILURE,
  CSV_MAX_PAGES: EXIT_FAILURE,
  CSV_PAGE_TOO_LARGE: EXIT_FAILURE,
  DATASET_NOT_FOUND: EXIT_USAGE,
  DEADLINE_EXCEEDED: EXIT_FAILURE,
  DECODE_FAILED: EXIT_FAILURE,
  EXPORT_CHANGED: EXIT_FAILURE,
  FAULT_SPEC_INVALID: EXIT_USAGE,
  HTTP_LISTEN: EXIT_USAGE,
  HTTP_NETWORK: EXIT_FAILURE,
  HTTP_STATUS: EXIT_FAILURE,
  INVALID_CHARSET_DATA: EXIT_FAILURE,
  JOB_INVALID: EXIT_USAGE,
  LIST_INVALID: EXIT_FAILURE,
  NDJSON_DOCUMENT_INVALID: EXIT_FAILURE,
  NDJSON_EXPORT_NOT_FOUND: EXIT_FAILURE,
  POSTGRES_PUBLISH_FAILED: EXIT_FAILURE,
  PUBLISH_FAILED: EXIT_FAILURE,
  READER_BUSY: EXIT_FAILURE,
  READER_CLOSED: EXIT_FAILURE,
  READER_LISTEN: EXIT_USAGE,
  READER_POSTGRES_UNAVAILABLE: EXIT_FAILURE,
  READER_QUERY_TIMEOUT: EXIT_FAILURE,
  REDIRECT_INVALID: EXIT_FAILURE,
  REDIRECT_LIMIT: EXIT_FAILURE,
  REJECT_RATIO: EXIT_FAILURE,
  RESET_NOT_CONFIRMED: EXIT_USAGE,
  // A signal's own status (130/143) is set where the signal is seen (sync-and-print.ts).
  RUN_ABORTED: EXIT_FAILURE,
  RUN_FAILED: EXIT_FAILURE,
  RUN_INTERRUPTED: EXIT_FAILURE,
  RUN_NOT_FOUND: EXIT_USAGE,
  SCHEMA_FROZEN: EXIT_FAILURE,
  SIMULATOR_LISTEN: EXIT_USAGE,
  SOURCE_UNKNOWN: EXIT_USAGE,
  SQL_ERROR: EXIT_FAILURE,
  SQL_MULTIPLE: EXIT_USAGE,
  STAGING_MISMATCH: EXIT_FAILURE,
  STATS_INVALID: EXIT_FAILURE,
  UNEXPECTED_CONTENT_TYPE: EXIT_FAILURE,
  UNSUPPORTED_CHARSET: EXIT_FAILURE,
  WAREHOUSE_LOCKED: EXIT_USAGE,
  WAREHOUSE_MISSING: EXIT_USAGE,
  WAREHOUSE_OPEN: EXIT_FAILURE,
  WAREHOUSE_OUT_OF_MEMORY: EXIT_FAILURE,
  WAREHOUSE_WRITE: EXIT_FAILURE,
};

/** The conventional status of a process stopped by a signal: 128 + its number. */
const SIGNAL_EXIT_CODES: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * The exit status of a command stopped by `signal`: 130 for SIGINT, 143 for SIGTERM (128 + the signal's
 * number), {@link EXIT_FAILURE} for any other signal.
 */
export function signalExitCode(signal: NodeJS.Signals): number {
  return SIGNAL_EXIT_CODES[signal] ?? EXIT_FAILURE;
}

/**
 * The exit status of a command that ended by throwing `error`:
 * - a `SyncError`: its code's status in {@link ERROR_EXIT_CODES} (1 or 2);
 * - a commander error (bad usage, unknown option): 2; `--help` and `--version` end with one of status 0,
 *   which stays 0;
 * - anything else (a bug): 1.
 */
export function exitCodeFor(error: unknown): number {
  if (error instanceof SyncError) return ERROR_EXIT_CODES[error.code];
  if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_SUCCESS : EXIT_USAGE;
  return EXIT_FAILURE;
}
