import { EnvHttpProxyAgent, type Dispatcher } from 'undici';
import type { Config } from '../config/config.js';
import { packageVersion } from '../util/version.js';

/** The `User-Agent` of every upstream request: `reports-sync/<version>`, so operators can tell it apart. */
export function userAgent(): string {
  return `reports-sync/${packageVersion()}`;
}

/**
 * The one HTTP dispatcher of a process: undici's `EnvHttpProxyAgent` (`HTTP_PROXY`, `HTTPS_PROXY` and
 * `NO_PROXY`, lower case too, are honoured; without them it connects directly) with the configured
 * connect/headers/body timeouts (ms), the largest response header section (`REPORTS_MAX_HEADER_BYTES`), and a `User-Agent: reports-sync/<version>` on every request that sets
 * none. `bodyTimeout` is the longest silence between two body chunks, so a stalled body fails with
 * `UND_ERR_BODY_TIMEOUT` instead of hanging (docs/how-a-sync-works.md).
 */
export function createHttpAgent(
  config: Pick<Config, 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs' | 'maxHeaderBytes'>,
): Dispatcher {
  return new EnvHttpProxyAgent({
    connect: { timeout: config.connectTimeoutMs },
    headersTimeout: config.headersTimeoutMs,
    maxHeaderSize: config.maxHeaderBytes,
    bodyTimeout: config.bodyTimeoutMs,
  }).compose(withUserAgent(userAgent()));
}

/** An undici interceptor adding `user-agent: <value>` to requests whose headers have none. */
function withUserAgent(value: string): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) =>
    dispatch({ ...options, headers: addUserAgent(options.headers, value) }, handler);
}

function addUserAgent(
  headers: Dispatcher.DispatchOptions['headers'],
  value: string,
): Dispatcher.DispatchOptions['headers'] {
  if (headers === undefined || headers === null) return { 'user-agent': value };
  if (Array.isArray(headers)) {
    const flat = headers as string[];
    for (let i = 0; i < flat.length; i += 2)
      if (String(flat[i]).toLowerCase() === 'user-agent') return headers;
    return [...flat, 'user-agent', value];
  }
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    const pairs = [...(headers as Iterable<[string, string | string[] | undefined]>)];
    if (pairs.some(([k]) => k.toLowerCase() === 'user-agent')) return headers;
    return [...pairs, ['user-agent', value]] as Dispatcher.DispatchOptions['headers'];
  }
  const record = headers as Record<string, string | string[] | undefined>;
  if (Object.keys(record).some((k) => k.toLowerCase() === 'user-agent')) return headers;
  return { ...record, 'user-agent': value };
}
