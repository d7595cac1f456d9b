import { ERROR_CODES, type RetryScope, type SyncErrorCode } from './error-codes.js';
import { redactDeep, redactSecrets } from './redact.js';

export type { RetryScope, SyncErrorCode } from './error-codes.js';

/**
 * The one error type of reports-sync. Every failure that reaches a user carries:
 * - `code`: a {@link SyncErrorCode} (error-codes.ts; docs/error-codes.md), stable and grep-able, in the
 *   spirit of undici's `UND_ERR_*`;
 * - `context`: JSON-able facts (URL without secrets, file, line, status) for logs and the run log;
 * - `retry`: what may succeed if done again ({@link RetryScope}: the request, the whole export, or
 *   nothing); `retryable` is `retry !== 'none'`, what the retry loops read;
 * - `cause`: the underlying error, when there is one.
 *
 * The process exit status of a command it ends is the CLI's business: src/cli/exit-codes.ts maps each code.
 */
export class SyncError extends Error {
  override readonly name = 'SyncError';
  readonly code: SyncErrorCode;
  readonly context: Record<string, unknown>;
  readonly retry: RetryScope;

  /**
   * @param options.retry the retry scope; else `retryable: true` takes the code's scope (error-codes.ts,
   *   `request` for a code whose scope is `none`), and nothing means `none`
   */
  constructor(
    code: SyncErrorCode,
    message: string,
    options: {
      context?: Record<string, unknown>;
      retry?: RetryScope;
      retryable?: boolean;
      cause?: unknown;
    } = {},
  ) {
    // Upstream text (an excerpt, a record) may echo the key: redacted here, once for every error.
    super(redactSecrets(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.context = redactDeep(options.context ?? {});
    this.retry = options.retry ?? (options.retryable === true ? retryScopeOf(code) : 'none');
  }

  /** Whether doing it again may succeed (`retry` is not `none`). */
  get retryable(): boolean {
    return this.retry !== 'none';
  }

  /** A JSON-able summary for logs and `sync_runs.error` (no stack, no secrets: callers never put secrets in context). */
  toJSON(): Record<string, unknown> {
    const json: Record<string, unknown> = {
      code: this.code,
      message: this.message,
      context: this.context,
      retryable: this.retryable,
    };
    if (this.cause !== undefined) json.cause = causeJson(this.cause, 3);
    return json;
  }
}

/** `{ code, message, cause }` of an underlying error (credentials in URLs redacted), `depth` causes deep. */
function causeJson(cause: unknown, depth: number): Record<string, unknown> {
  const redact = (text: string) => text.replace(/\/\/[^/@\s]*@/g, '//[redacted]@');
  if (!(cause instanceof Error)) return { message: redact(String(cause)) };
  const json: Record<string, unknown> = { message: redact(cause.message) };
  const code = (cause as { code?: unknown }).code;
  if (typeof code === 'string') json.code = code;
  if (cause.cause !== undefined && depth > 1) json.cause = causeJson(cause.cause, depth - 1);
  return json;
}

/** True when `err` is a {@link SyncError} with one of the given codes (or any code when none are given). */
export function isSyncError(err: unknown, ...codes: SyncErrorCode[]): err is SyncError {
  return err instanceof SyncError && (codes.length === 0 || codes.includes(err.code));
}

/** The message of any thrown value (secrets redacted), for places that must print something readable. */
export function errorMessage(err: unknown): string {
  return redactSecrets(err instanceof Error ? err.message : String(err));
}

/** The scope of a retryable error of `code`: the code's own, or `request` for a code that has none. */
function retryScopeOf(code: SyncErrorCode): RetryScope {
  const scope = ERROR_CODES[code].retry;
  return scope === 'none' ? 'request' : scope;
}
