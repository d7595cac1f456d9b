import type { Readable } from 'node:stream';
import { request, type Dispatcher } from 'undici';
import { SyncError } from '../util/errors.js';
import { ACCEPT_ENCODING, decodeBody } from './content-encoding.js';
import { safeUrl } from '../util/safe-url.js';
import { startDeadline, watchSpeed, type MinSpeed, type RequestDeadline } from './body-limits.js';
import {
  header,
  headerList,
  networkError,
  readExcerpt,
  reachedByRedirect,
  redirectTarget,
  statusError,
} from './http-answers.js';

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
      const cause = options.signal?.aborted ? (options.signal.reason ?? err) : err;
      const failed = networkError(cause, current, hop > 0);
      throw hop > 0 ? reachedByRedirect(failed, first, hop) : failed;
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
          `More than ${options.maxRedirects} redirects starting at ${safeUrl(first)} (last hop ${safeUrl(current)}): ` +
            'a redirect loop? (REPORTS_MAX_REDIRECTS sets how many are followed)',
          { context: { url: safeUrl(first), last: safeUrl(current), redirects: hop } },
        );
      }
      current = redirectTarget(location, current, res.statusCode);
      continue;
    }
    let decoded;
    try {
      decoded = decodeBody(
        res.body,
        headerList(res.headers, 'content-encoding'),
        safeUrl(current),
        header(res.headers, 'content-type'),
      );
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
      const excerpt = await readExcerpt(body, options.apiKey);
      throw statusError(res.statusCode, res.headers, current, excerpt, isConditional(headers));
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

/** True when the request asks conditionally (`If-None-Match`, `If-Modified-Since`: a 304 may answer it). */
function isConditional(headers: Record<string, string>): boolean {
  return Object.keys(headers).some((h) => /^if-(none-match|modified-since)$/i.test(h));
}
