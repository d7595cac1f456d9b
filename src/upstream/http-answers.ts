import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { SyncError } from '../util/errors.js';
import { parseRetryAfter } from './retry-after.js';
import { safeUrl } from '../util/safe-url.js';
import { doubledPrefixHint, tlsMistake } from './url-mistakes.js';

// Response headers, and the errors an answer or a failed request becomes (open-stream.ts).

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

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

// Enough of an error page for its excerpt: the rest is never read (it may be endless).
const EXCERPT_READ_BYTES = 4096;

/**
 * The first 200 characters of an error body (whitespace runs as one space, `secret` redacted), from at
 * most its first 4 KiB: the body is destroyed then, so its connection is closed, never reused half-read.
 * Never throws: a body that fails gives what arrived before it failed ('' for nothing).
 */
export async function readExcerpt(body: Readable, secret?: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      chunks.push(Buffer.from(chunk));
      size += chunk.length;
      if (size >= EXCERPT_READ_BYTES) break;
    }
  } catch {
    // What arrived before the failure still tells what the server said.
  } finally {
    body.destroy();
  }
  // Redact before cutting, so no prefix of the key survives at the cut.
  const text = redactSecret(Buffer.concat(chunks).subarray(0, EXCERPT_READ_BYTES).toString('utf8'), secret);
  return text.slice(0, 200).replace(/\s+/g, ' ').trim();
}

/**
 * Wraps an undici/network error as a retryable `HTTP_NETWORK` SyncError that names the URL (without
 * secrets) and the cause code (`UND_ERR_BODY_TIMEOUT`, `ECONNRESET`, …); a TLS failure (url-mistakes.ts:
 * `https://` to a plain-HTTP port, a refused certificate) is not retryable and says what to change (no
 * setting when `redirected`: the URL is a redirect's target), nor is a request undici refuses to send.
 * Aborts pass through unchanged.
 */
export function networkError(err: unknown, url: URL | string, redirected = false): unknown {
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
  const tls = tlsMistake(code, message, new URL(String(url)), redirected);
  if (tls !== undefined) {
    // Not retried: a server that does not speak TLS, or a certificate refused, stays so.
    return new SyncError('HTTP_NETWORK', `${code} while reading ${safeUrl(url)}: ${tls}`, {
      context: { url: safeUrl(url), cause: code },
      cause: err,
    });
  }
  const remedy = transportRemedy(code, message);
  return new SyncError('HTTP_NETWORK', `${code} while reading ${safeUrl(url)}: ${remedy?.text ?? message}`, {
    context: { url: safeUrl(url), cause: code },
    retryable: remedy?.retryable ?? true,
    cause: err,
  });
}

// undici's timeouts, by the setting that sets each.
const TIMEOUT_SETTINGS: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'REPORTS_CONNECT_TIMEOUT_MS',
  UND_ERR_HEADERS_TIMEOUT: 'REPORTS_HEADERS_TIMEOUT_MS',
  UND_ERR_BODY_TIMEOUT: 'REPORTS_BODY_TIMEOUT_MS',
};

/** What an undici error means for the user, when its own message does not say what to change. */
function transportRemedy(code: string, message: string): { text: string; retryable: boolean } | undefined {
  if (code === 'UND_ERR_INVALID_ARG') {
    // undici refused the request before sending it (a URL it cannot ask): the same on every attempt.
    return { text: `${message} (not retried)`, retryable: false };
  }
  if (code === 'UND_ERR_HEADERS_OVERFLOW') {
    // The same headers come back on every attempt: retrying cannot help.
    return {
      text:
        "the response headers exceed undici's maximum header size (REPORTS_MAX_HEADER_BYTES): raise it " +
        'if the server really sends headers this large; not retried',
      retryable: false,
    };
  }
  const setting = TIMEOUT_SETTINGS[code];
  if (setting !== undefined) {
    return { text: `${message} (${setting}: raise it if the server is really this slow)`, retryable: true };
  }
  if (code === 'UND_ERR_SOCKET' && message === 'bad response') {
    // undici's only two causes of this message (client-h1.js); neither tells which one it was.
    return {
      text:
        'bad response: the server sent an answer no request was waiting for, or an unsolicited ' +
        '`100 Continue` before its answer (undici cannot read one)',
      retryable: true,
    };
  }
  return undefined;
}

// A 304 answers a conditional request only (RFC 9110 §15.4.5): to any other, something in between is at fault.
const UNASKED_304 =
  'Not Modified, to a request that sent no If-None-Match or If-Modified-Since: a cache or proxy between ' +
  'us and the service answers for another client; it must pass this request on';

/**
 * The `HTTP_STATUS` error of a non-200 answer, retryable for {@link RETRYABLE_STATUS}; a 404 whose path
 * repeats itself says the base URL may hold the API's prefix (url-mistakes.ts), a 304 to a request that
 * was not `conditional` says it was never asked for.
 */
export function statusError(
  status: number,
  headers: Dispatcher.ResponseData['headers'],
  url: URL,
  excerpt: string,
  conditional = false,
): SyncError {
  const retryAfterMs = parseRetryAfter(headers['retry-after']);
  const hint =
    status === 404 ? doubledPrefixHint(url) : status === 304 && !conditional ? UNASKED_304 : undefined;
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
export function redirectTarget(location: string, from: URL, status: number): URL {
  let target: URL;
  try {
    target = new URL(location, from);
  } catch {
    throw new SyncError(
      'REDIRECT_INVALID',
      `${status} from ${safeUrl(from)} points at ${JSON.stringify(location.slice(0, 200))}, which is not a URL`,
      { context: { url: safeUrl(from), status } },
    );
  }
  // Only HTTP is followed: a `file:`, `ftp:` or `data:` target fails the same way on every attempt.
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new SyncError(
      'REDIRECT_INVALID',
      `${status} from ${safeUrl(from)} points at a ${target.protocol} URL (${safeUrl(target).slice(0, 200)}): only http: and https: redirects are followed`,
      { context: { url: safeUrl(from), status } },
    );
  }
  return target;
}

/**
 * A failure of a request a redirect led to, naming where the redirects began: the URL that failed is the
 * server's, not a setting (a TLS hint to change REPORTS_BASE_URL is about the redirect's target). Keeps
 * the code and retry scope; anything but a SyncError passes unchanged.
 */
export function reachedByRedirect(err: unknown, first: URL, hops: number): unknown {
  if (!(err instanceof SyncError)) return err;
  const via = `reached by ${hops} redirect${hops === 1 ? '' : 's'} from ${safeUrl(first)}`;
  return new SyncError(err.code, `${err.message} (${via}: the upstream's redirect chose this URL)`, {
    context: { ...err.context, redirectedFrom: safeUrl(first), redirects: hops },
    retry: err.retry,
    cause: err,
  });
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

/**
 * A 400 or 422 to a request that asked `pageSize`: the server's maximum is not shown (docs/upstream-contract.md),
 * so the error says which setting asked it. Other errors pass through unchanged.
 */
export function refusedPageSize(err: unknown, setting: string, pageSize: number): unknown {
  if (!(err instanceof SyncError) || err.code !== 'HTTP_STATUS') return err;
  const status = Number(err.context.status);
  if (status !== 400 && status !== 422) return err;
  return new SyncError(
    'HTTP_STATUS',
    `${err.message} (the request asked pageSize=${pageSize}: if the server allows fewer rows per page, lower ${setting})`,
    { context: { ...err.context, setting }, cause: err },
  );
}

/**
 * A 404 or 410 to the first request of an endpoint whose path is a setting (the upstream shows the seeded
 * paths, but a real service may keep them elsewhere): the error says which setting names it. Errors that
 * already say what to change (a base URL holding the API's prefix), and every other error, pass unchanged.
 */
export function notAtPath(err: unknown, setting: string): unknown {
  if (!(err instanceof SyncError) || err.code !== 'HTTP_STATUS') return err;
  const status = Number(err.context.status);
  if ((status !== 404 && status !== 410) || err.message.includes('REPORTS_BASE_URL')) return err;
  return new SyncError(
    'HTTP_STATUS',
    `${err.message} (nothing at this path: if the service has it elsewhere, set ${setting})`,
    {
      context: { ...err.context, setting },
      cause: err,
    },
  );
}
