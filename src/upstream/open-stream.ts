import type { Readable } from 'node:stream';
import { request, type Dispatcher } from 'undici';
import { SyncError } from '../util/errors.js';
import { parseRetryAfter } from './retry-after.js';
import { safeUrl } from './safe-url.js';

/** A 200 response whose body has not been read yet. */
export interface OpenResponse {
  /** The URL that finally answered 200 (after redirects), already safe to log. */
  url: string;
  /** The URL that answered, as a URL (for resolving relative `Link` targets). */
  finalUrl: URL;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
  /** How many redirects were followed. */
  redirects: number;
}

/** Options of {@link openStream}. */
export interface OpenStreamOptions {
  dispatcher: Dispatcher;
  /** Sent as `X-API-Key` to the origin of the first URL only: dropped when a redirect leaves it. */
  apiKey?: string | undefined;
  /** Redirects followed before giving up (DESIGN.md §4: at most 5). */
  maxRedirects: number;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Content types refused even with a 200 (e.g. an HTML login page behind a redirect). Default: `text/html`. */
  refuseContentTypes?: RegExp;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/**
 * GETs `url` and follows redirects by hand (so the key can be dropped on a cross-origin hop and a
 * redirect limit is an error — undici hands the 3xx back silently past its own limit, DESIGN.md §4).
 * Resolves with the open body of the final 200.
 *
 * @throws SyncError `HTTP_STATUS` (retryable for 408/425/429/5xx, with `context.retryAfterMs` from
 *   `Retry-After`), `REDIRECT_LIMIT`, `REDIRECT_INVALID`, `UNEXPECTED_CONTENT_TYPE`, or `HTTP_NETWORK`
 *   (retryable: resets, refused connections, timeouts). Messages name the URL without secrets.
 */
export async function openStream(url: string | URL, options: OpenStreamOptions): Promise<OpenResponse> {
  const first = new URL(String(url));
  let current = first;
  for (let hop = 0; ; hop++) {
    const sameOrigin = current.origin === first.origin;
    const headers: Record<string, string> = { ...options.headers };
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
      throw networkError(err, current);
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
      current = new URL(location, current);
      continue;
    }
    if (res.statusCode !== 200) {
      // An error page may echo the request's headers (a 401 quoting the key it refused): never let the
      // key into the message, the log or the run log through it (DESIGN.md §2).
      const excerpt = await readExcerpt(res.body, options.apiKey);
      const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
      throw new SyncError(
        'HTTP_STATUS',
        `HTTP ${res.statusCode} from ${safeUrl(current)}${excerpt ? `: ${excerpt}` : ''}`,
        {
          context: { url: safeUrl(current), status: res.statusCode, retryAfterMs, excerpt },
          retryable: RETRYABLE_STATUS.has(res.statusCode),
        },
      );
    }
    const contentType = header(res.headers, 'content-type') ?? '';
    if ((options.refuseContentTypes ?? /^text\/html\b/i).test(contentType)) {
      await res.body.dump().catch(() => undefined);
      throw new SyncError(
        'UNEXPECTED_CONTENT_TYPE',
        `${safeUrl(current)} answered 200 with ${contentType} (a login or error page?) instead of the export`,
        { context: { url: safeUrl(current), contentType, redirects: hop } },
      );
    }
    return { url: safeUrl(current), finalUrl: current, headers: res.headers, body: res.body, redirects: hop };
  }
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

async function readExcerpt(body: Dispatcher.ResponseData['body'], secret?: string): Promise<string> {
  try {
    // Redact before cutting, so no prefix of the key survives at the cut.
    const text = redactSecret(await body.text(), secret);
    return text.slice(0, 200).replace(/\s+/g, ' ').trim();
  } catch {
    return '';
  }
}

/**
 * Wraps an undici/network error as a retryable `HTTP_NETWORK` SyncError that names the URL (without
 * secrets) and the cause code (`UND_ERR_BODY_TIMEOUT`, `ECONNRESET`, …). Aborts pass through unchanged.
 */
export function networkError(err: unknown, url: URL | string): unknown {
  if (err instanceof SyncError) return err;
  if (err instanceof Error && (err.name === 'AbortError' || (err as { code?: string }).code === 'ABORT_ERR'))
    return err;
  const code = (err as { code?: string }).code ?? 'UNKNOWN';
  const message = err instanceof Error ? err.message : String(err);
  return new SyncError('HTTP_NETWORK', `${code} while reading ${safeUrl(url)}: ${message}`, {
    context: { url: safeUrl(url), cause: code },
    retryable: true,
    cause: err,
  });
}
