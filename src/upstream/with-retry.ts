import pRetry from 'p-retry';
import type { Logger } from '../util/logger.js';
import { isSyncError, SyncError } from '../util/errors.js';

/** Retry policy (ms), from the configuration. */
export interface RetryPolicy {
  retries: number;
  retryBaseMs: number;
  retryMaxTimeMs: number;
}

/**
 * Runs `attempt` and retries it on retryable {@link SyncError}s (429/5xx, resets, timeouts, a body cut
 * short) with jittered exponential backoff (p-retry), honouring `Retry-After` (`context.retryAfterMs`)
 * when it asks for longer. Total time is bounded by `retryMaxTimeMs` (plus the one attempt under way when it
 * runs out); a `Retry-After` longer than what is left of it ends the retries at once, without knocking
 * again early. Every attempt restarts from its
 * beginning: callers pass a function that re-opens the request and discards partial work (never a
 * `Range` splice, docs/how-a-sync-works.md).
 *
 * @param attempt receives the 1-based attempt number
 * @throws the last error when it is not retryable or the budget is spent
 */
export async function withRetry<T>(
  what: string,
  policy: RetryPolicy,
  logger: Logger,
  attempt: (n: number) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const started = Date.now();
  try {
    return await retried(what, policy, logger, attempt, signal, started);
  } catch (err) {
    // Stopped (a signal, a request dropped): the stop's reason is the outcome, not the failure it cut short.
    throw signal?.aborted && signal.reason !== undefined ? signal.reason : err;
  }
}

function retried<T>(
  what: string,
  policy: RetryPolicy,
  logger: Logger,
  attempt: (n: number) => Promise<T>,
  signal: AbortSignal | undefined,
  started: number,
): Promise<T> {
  return pRetry(attempt, {
    retries: policy.retries,
    factor: 2,
    minTimeout: policy.retryBaseMs,
    maxTimeout: Math.max(policy.retryBaseMs, 30_000),
    randomize: true,
    maxRetryTime: policy.retryMaxTimeMs,
    signal,
    // A request its caller dropped (a page fetched ahead that is no longer wanted) is no failure to retry
    // or to warn about.
    shouldRetry: ({ error }) => !signal?.aborted && isSyncError(error) && error.retryable,
    onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
      if (signal?.aborted || !(isSyncError(error) && error.retryable) || retriesLeft === 0) return;
      const hint = error.context.retryAfterMs as number | undefined;
      const left = policy.retryMaxTimeMs - (Date.now() - started);
      // The server asks for a longer wait than the budget allows: stop now rather than knock again
      // after p-retry's own short backoff, which the server has just asked us not to do.
      if (hint !== undefined && hint > left) throw retryAfterTooLong(error, hint, left);
      logger.warn(
        { err: error.toJSON(), attempt: attemptNumber, retriesLeft, retryAfterMs: hint },
        `${what} failed (attempt ${attemptNumber} of ${attemptNumber + retriesLeft}), retrying`,
      );
      if (hint !== undefined) await sleep(hint, signal);
    },
  });
}

function retryAfterTooLong(error: SyncError, hintMs: number, leftMs: number): SyncError {
  return new SyncError(
    error.code,
    `${error.message} (Retry-After asks for ${Math.ceil(hintMs / 1000)} s, more than the ` +
      `${Math.max(0, Math.round(leftMs / 1000))} s left of REPORTS_RETRY_MAX_TIME_MS: giving up; run again later)`,
    { context: { ...error.context, retryAfterExceedsBudget: true }, retryable: false, cause: error.cause },
  );
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
