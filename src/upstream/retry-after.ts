import { parseHttpDate } from '../util/http-date.js';

/**
 * Parses an HTTP `Retry-After` header (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
 * Returns the wait in ms, or `undefined` when there is no usable hint (absent, malformed, 0 or in the past
 * — docs/how-a-sync-works.md: 0 or past = no hint).
 *
 * @param now the current time in ms since the epoch (injectable for tests)
 */
export function parseRetryAfter(
  value: string | string[] | undefined,
  now: number = Date.now(),
): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) {
    const seconds = Number(trimmed);
    return seconds > 0 ? seconds * 1000 : undefined;
  }
  const at = parseHttpDate(trimmed, now);
  if (at === undefined) return undefined;
  const wait = at - now;
  return wait > 0 ? wait : undefined;
}
