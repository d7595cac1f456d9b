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
 * when it asks for longer. Total time is bounded by `retryMaxTimeMs`. Every attempt restarts from its
 * beginning: callers pass a function that re-opens the request and discards partial work (never a
 * `Range` splice, DESIGN.md §4).
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
  return pRetry(attempt, {
    retries: policy.retries,
    factor: 2,
    minTimeout: policy.retryBaseMs,
    maxTimeout: Math.max(policy.retryBaseMs, 30_000),
    randomize: true,
    maxRetryTime: policy.retryMaxTimeMs,
    signal,
    shouldRetry: ({ error }) => isSyncError(error) && error.retryable,
    onFailedAttempt: async ({ error, attemptNumber, retriesLeft }) => {
      if (!(isSyncError(error) && error.retryable) || retriesLeft === 0) return;
      const hint =
        error instanceof SyncError ? (error.context.retryAfterMs as number | undefined) : undefined;
      logger.warn(
        {
          err: error instanceof SyncError ? error.toJSON() : error,
          attempt: attemptNumber,
          retriesLeft,
          retryAfterMs: hint,
        },
        `${what} failed, retrying`,
      );
      if (hint !== undefined) {
        const left = policy.retryMaxTimeMs - (Date.now() - started);
        if (hint > left) return; // p-retry's own time budget ends the retries
        await sleep(hint, signal);
      }
    },
  });
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
