import type { Readable } from 'node:stream';
import { request, type Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { SyncError } from '../util/errors.js';
import { ACCEPT_ENCODING, decodeBody } from './content-encoding.js';
import { parseRetryAfter } from './retry-after.js';
import { safeUrl } from '../util/safe-url.js';
import { doubledPrefixHint, tlsMistake } from './url-mistakes.js';

/** A 200 response whose body has not been read yet. */
export interface OpenResponse {
  /** The URL that finally answered 200 (after redirects), already safe to log. */
  url: string;
  /** The URL that answered, as a URL (for resolving relative `Link` targets). */
  finalUrl: URL;
  headers: Record<string, string | string[] | undefined>;
  /** The body, decoded from its `Content-Encoding` (content-encoding.ts). */
  body: Readable;
  /** Body bytes received on the wire so far (compressed, when the body is); `body` yields the decoded ones. */
  wireBytes(): number;
  /** How many redirects were followed. */
  redirects: number;
  /** The final answer's status: 200, 203 or 204 (no content: `body` is empty). */
  status: number;
}

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

/** Options of {@link openStream}. */
export interface OpenStreamOptions {
  dispatcher: Dispatcher;
  /** Sent as `X-API-Key` to the origin of the first URL only: dropped when a redirect leaves it. */
  apiKey?: string | undefined;
  /** Redirects followed before giving up (docs/how-a-sync-works.md: at most 5). */
  maxRedirects: number;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Content types refused even with a 200 (e.g. an HTML login page behind a redirect). Default: `text/html`. */
  refuseContentTypes?: RegExp;
  /**
   * The whole request (redirects, headers and the body until it is read or destroyed) must end within it,
   * however steadily a slow body trickles in (the body timeout only catches silence).
   */
  deadline?: RequestDeadline | undefined;
  /** A body slower than this fails with `BODY_TOO_SLOW` (retryable), see {@link MinSpeed}. */
  minSpeed?: MinSpeed | undefined;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/**
 * A body to read: 200, 203 (the same, transformed by a proxy: RFC 9110 §15.3.4), or 204 (success with no
 * content, RFC 9110 §15.3.5: an empty body, as some servers answer a page past the end or an empty list).
 */
const OK_STATUS = new Set([200, 203, 204]);

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * GETs `url` and follows redirects by hand (so the key can be dropped on a cross-origin hop and a
 * redirect limit is an error — undici hands the 3xx back silently past its own limit, docs/how-a-sync-works.md).
 * Resolves with the open body of the final 200, decoded from its `Content-Encoding` (`Accept-Encoding:
 * gzip, deflate, br` is sent).
 *
 * @throws SyncError `HTTP_STATUS` (retryable for 408/425/429/5xx, with `context.retryAfterMs` from
 *   `Retry-After`), `REDIRECT_LIMIT`, `REDIRECT_INVALID`, `UNEXPECTED_CONTENT_TYPE`,
 *   `CONTENT_ENCODING_UNSUPPORTED`, or `HTTP_NETWORK` (retryable: resets, refused connections, timeouts).
 *   `DEADLINE_EXCEEDED` (not retryable) when `deadline` passes, here or later while the body is read;
 *   `BODY_TOO_SLOW` (retryable) from the body when it arrives slower than `minSpeed`.
 *   Messages name the URL without secrets.
 */
export async function openStream(url: string | URL, options: OpenStreamOptions): Promise<OpenResponse> {
  const first = new URL(String(url));
  const deadline = options.deadline ? startDeadline(options.deadline, first, options.signal) : undefined;
  try {
    const res = await openWithin(first, { ...options, signal: deadline?.signal ?? options.signal });
    if (options.minSpeed) watchSpeed(res, options.minSpeed);
    if (deadline) {
      // The reader sees DEADLINE_EXCEEDED, not the bare abort undici destroys its body with.
      const expire = () => res.body.destroy(deadline.signal.reason as Error);
      deadline.signal.addEventListener('abort', expire, { once: true });
      res.body.once('close', () => {
        deadline.clear();
        deadline.signal.removeEventListener('abort', expire);
      });
    }
    return res;
  } catch (err) {
    deadline?.clear();
    throw err;
  }
}

// Samples of the received byte count per window: the average is judged over a window sliding by a fifth.
const SPEED_SAMPLES = 5;

/**
 * Destroys `res.body` with `BODY_TOO_SLOW` (retryable, as a stall is) once fewer than
 * `min.bytesPerSecond` arrived on average over the last `min.windowMs`. The body's bytes are sampled
 * every fifth of the window; a sample taken while the body's buffer is full (our side is not reading)
 * starts the window again.
 */
function watchSpeed(res: OpenResponse, min: MinSpeed): void {
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
function startDeadline(
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

async function openWithin(first: URL, options: OpenStreamOptions): Promise<OpenResponse> {
  let current = first;
  for (let hop = 0; ; hop++) {
    const sameOrigin = current.origin === first.origin;
    const headers: Record<string, string> = { 'accept-encoding': ACCEPT_ENCODING, ...options.headers };
    if (options.apiKey && sameOrigin) headers['x-api-key'] = options.apiKey;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(current, {
        method: 'GET',
        headers,
        dispatcher: options.dispatcher,
        signal: options.signal,
      });
    } catch (err) {
      throw networkError(options.signal?.aborted ? (options.signal.reason ?? err) : err, current);
    }
    if (REDIRECTS.has(res.statusCode)) {
      await res.body.dump().catch(() => undefined);
      const location = header(res.headers, 'location');
      if (!location) {
        throw new SyncError(
          'REDIRECT_INVALID',
          `${res.statusCode} without a Location header from ${safeUrl(current)}`,
          {
            context: { url: safeUrl(current), status: res.statusCode },
          },
        );
      }
      if (hop >= options.maxRedirects) {
        throw new SyncError(
          'REDIRECT_LIMIT',
          `More than ${options.maxRedirects} redirects starting at ${safeUrl(first)} (last hop ${safeUrl(current)}): a redirect loop?`,
          { context: { url: safeUrl(first), last: safeUrl(current), redirects: hop } },
        );
      }
      current = redirectTarget(location, current, res.statusCode);
      continue;
    }
    let decoded;
    try {
      decoded = decodeBody(res.body, headerList(res.headers, 'content-encoding'), safeUrl(current));
    } catch (err) {
      res.body.on('error', () => undefined); // the abort of an unread body is no failure of its own
      res.body.destroy();
      // An error status stays the failure (and keeps its retry rule) when its page cannot be decoded.
      if (!OK_STATUS.has(res.statusCode)) throw statusError(res.statusCode, res.headers, current, '');
      throw err;
    }
    const body = decoded.body;
    if (!OK_STATUS.has(res.statusCode)) {
      // An error page may echo the request's headers (a 401 quoting the key it refused): never let the
      // key into the message, the log or the run log through it (docs/sources.md).
      throw statusError(res.statusCode, res.headers, current, await readExcerpt(body, options.apiKey));
    }
    const contentType = header(res.headers, 'content-type') ?? '';
    if ((options.refuseContentTypes ?? /^text\/html\b/i).test(contentType)) {
      body.destroy();
      throw new SyncError(
        'UNEXPECTED_CONTENT_TYPE',
        `${safeUrl(current)} answered 200 with ${contentType} (a login or error page?) instead of the export`,
        { context: { url: safeUrl(current), contentType, redirects: hop } },
      );
    }
    return {
      url: safeUrl(current),
      finalUrl: current,
      headers: res.headers,
      body,
      wireBytes: decoded.wireBytes,
      redirects: hop,
      status: res.statusCode,
    };
  }
}

/**
 * All values of a list-valued response header as one (RFC 9110 §5.3: repeated field lines of a list
 * combine with commas, so `Content-Encoding: gzip` sent twice means `gzip, gzip`), or undefined.
 */
export function headerList(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** First value of a response header. */
export function header(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** `text` with every occurrence of `secret` replaced by `[redacted]` (unchanged when there is no secret). */
export function redactSecret(text: string, secret: string | undefined): string {
  return secret ? text.split(secret).join('[redacted]') : text;
}

async function readExcerpt(body: Readable, secret?: string): Promise<string> {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(Buffer.from(chunk));
    // Redact before cutting, so no prefix of the key survives at the cut.
    const text = redactSecret(Buffer.concat(chunks).toString('utf8'), secret);
    return text.slice(0, 200).replace(/\s+/g, ' ').trim();
  } catch {
    return '';
  }
}

/**
 * Wraps an undici/network error as a retryable `HTTP_NETWORK` SyncError that names the URL (without
 * secrets) and the cause code (`UND_ERR_BODY_TIMEOUT`, `ECONNRESET`, …); a TLS failure (url-mistakes.ts:
 * `https://` to a plain-HTTP port, a refused certificate) is not retryable and says what to change.
 * Aborts pass through unchanged.
 */
export function networkError(err: unknown, url: URL | string): unknown {
  if (err instanceof SyncError) return err;
  const zlibCode = (err as { code?: string }).code;
  if (typeof zlibCode === 'string' && zlibCode.startsWith('Z_')) {
    // A compressed body that does not decode: cut short (Z_BUF_ERROR) or corrupt; fetched again.
    return new SyncError(
      'CONTENT_ENCODING_INVALID',
      `The compressed body of ${safeUrl(url)} does not decode (${zlibCode}: ${(err as Error).message})`,
      { context: { url: safeUrl(url), cause: zlibCode }, retryable: true, cause: err },
    );
  }
  if (err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR'))
    return err;
  const code = (err as { code?: string }).code ?? 'UNKNOWN';
  const message = err instanceof Error ? err.message : String(err);
  const tls = tlsMistake(code, message, new URL(String(url)));
  if (tls !== undefined) {
    // Not retried: a server that does not speak TLS, or a certificate refused, stays so.
    return new SyncError('HTTP_NETWORK', `${code} while reading ${safeUrl(url)}: ${tls}`, {
      context: { url: safeUrl(url), cause: code },
      cause: err,
    });
  }
  return new SyncError('HTTP_NETWORK', `${code} while reading ${safeUrl(url)}: ${message}`, {
    context: { url: safeUrl(url), cause: code },
    retryable: true,
    cause: err,
  });
}

/**
 * The `HTTP_STATUS` error of a non-200 answer, retryable for {@link RETRYABLE_STATUS}; a 404 whose path
 * repeats itself says the base URL may hold the API's prefix (url-mistakes.ts).
 */
function statusError(
  status: number,
  headers: Dispatcher.ResponseData['headers'],
  url: URL,
  excerpt: string,
): SyncError {
  const retryAfterMs = parseRetryAfter(headers['retry-after']);
  const hint = status === 404 ? doubledPrefixHint(url) : undefined;
  const text = `HTTP ${status} from ${safeUrl(url)}${hint ? ` (${hint})` : ''}${excerpt ? `: ${excerpt}` : ''}`;
  return new SyncError('HTTP_STATUS', text, {
    context: { url: safeUrl(url), status, retryAfterMs, excerpt },
    retryable: RETRYABLE_STATUS.has(status),
  });
}

/**
 * Where a redirect leads: `location` resolved against the URL that answered (RFC 9110 §10.2.2).
 *
 * @throws SyncError `REDIRECT_INVALID` when it is no URL
 */
function redirectTarget(location: string, from: URL, status: number): URL {
  try {
    return new URL(location, from);
  } catch {
    throw new SyncError(
      'REDIRECT_INVALID',
      `${status} from ${safeUrl(from)} points at ${JSON.stringify(location.slice(0, 200))}, which is not a URL`,
      { context: { url: safeUrl(from), status } },
    );
  }
}

/**
 * True when the transport checks where the body ends, so a cut connection is an error and never a short
 * body: a `Content-Length` or chunked framing (undici fails a body that ends early: `UND_ERR_SOCKET`).
 * Otherwise the body is close-delimited (RFC 9112 §6.3): its end cannot be told from a dropped connection.
 * A content coding does not check it: a gzip body may hold several members (RFC 1952 §2.2), and a cut
 * between two of them decodes cleanly.
 */
export function bodyEndChecked(headers: Record<string, string | string[] | undefined>): boolean {
  return headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined;
}
