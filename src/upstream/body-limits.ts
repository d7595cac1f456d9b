import type { Readable } from 'node:stream';
import type { Config } from '../config/config.js';
import { SyncError } from '../util/errors.js';
import { safeUrl } from '../util/safe-url.js';

// The time bounds of one request (open-stream.ts): an overall deadline, and the slowest body accepted.

/** An overall time limit for one request, headers and body together. */
export interface RequestDeadline {
  ms: number;
  /** The setting that sets it, named in the error (e.g. `REPORTS_PAGE_DEADLINE_MS`). */
  setting: string;
}

/**
 * The slowest body accepted (curl's `--speed-limit`/`--speed-time`): fewer than `bytesPerSecond` on average
 * over any `windowMs` of the body fails it. Time in which our side does not read (the body's buffer is full)
 * does not count: a slow consumer is no slow server.
 */
export interface MinSpeed {
  bytesPerSecond: number;
  windowMs: number;
}

/** The {@link MinSpeed} of a config (`REPORTS_MIN_SPEED_BYTES`, `REPORTS_MIN_SPEED_WINDOW_MS`); undefined when off (0). */
export function minSpeedOf(config: Pick<Config, 'minSpeedBytes' | 'minSpeedWindowMs'>): MinSpeed | undefined {
  if (config.minSpeedBytes <= 0) return undefined;
  return { bytesPerSecond: config.minSpeedBytes, windowMs: config.minSpeedWindowMs };
}

/** What {@link watchSpeed} watches: an open response's body, its URL (safe to log) and its wire byte count. */
export interface SpeedWatched {
  url: string;
  body: Readable;
  wireBytes(): number;
}

// Samples of the received byte count per window: the average is judged over a window sliding by a fifth.
const SPEED_SAMPLES = 5;

/**
 * Destroys `res.body` with `BODY_TOO_SLOW` (retryable, as a stall is) once fewer than
 * `min.bytesPerSecond` arrived on average over the last `min.windowMs`. The body's bytes are sampled
 * every fifth of the window; a sample taken while the body's buffer is full (our side is not reading)
 * starts the window again.
 */
export function watchSpeed(res: SpeedWatched, min: MinSpeed): void {
  const step = Math.max(20, Math.floor(min.windowMs / SPEED_SAMPLES));
  const samples = [res.wireBytes()];
  const timer = setInterval(() => {
    const body = res.body;
    samples.push(res.wireBytes());
    if (body.readableLength >= body.readableHighWaterMark) samples.splice(0, samples.length - 1);
    if (samples.length <= SPEED_SAMPLES) return;
    samples.shift();
    const bytes = samples[samples.length - 1]! - samples[0]!;
    const ms = step * SPEED_SAMPLES;
    if (bytes * 1000 >= min.bytesPerSecond * ms) return;
    clearInterval(timer);
    body.destroy(
      new SyncError(
        'BODY_TOO_SLOW',
        `${res.url} sent ${bytes} bytes in ${ms} ms, below the minimum of ${min.bytesPerSecond} bytes/s ` +
          '(REPORTS_MIN_SPEED_BYTES over REPORTS_MIN_SPEED_WINDOW_MS): the body trickles; it is fetched again',
        {
          context: { url: res.url, bytes, windowMs: ms, minBytesPerSecond: min.bytesPerSecond },
          retryable: true,
        },
      ),
    );
  }, step);
  timer.unref();
  res.body.once('close', () => clearInterval(timer));
}

/**
 * An AbortSignal that aborts with `DEADLINE_EXCEEDED` once `deadline.ms` have passed (or with the outer
 * signal's reason when that aborts first). Not retried: a body that cannot arrive within the deadline would
 * take the deadline again on every retry.
 */
export function startDeadline(
  deadline: RequestDeadline,
  url: URL,
  outer: AbortSignal | undefined,
): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort(
      new SyncError(
        'DEADLINE_EXCEEDED',
        `${safeUrl(url)} did not answer in full within ${deadline.ms} ms (${deadline.setting}): the server ` +
          'sends too slowly; raise the setting if the export is really that slow to serve',
        { context: { url: safeUrl(url), deadlineMs: deadline.ms, setting: deadline.setting } },
      ),
    );
  }, deadline.ms);
  const onOuter = () => controller.abort(outer?.reason);
  outer?.addEventListener('abort', onOuter, { once: true });
  if (outer?.aborted) onOuter();
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}
