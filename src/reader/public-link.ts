import type { FastifyRequest } from 'fastify';
import type { Config } from '../config/config.js';

/**
 * A link to `pathAndQuery` (starting with `/`) for a response header such as `Link`. Absolute only from a
 * source the operator vouches for: REPORTS_PUBLIC_URL, else (with REPORTS_READER_TRUST_PROXY) the
 * `X-Forwarded-Proto`/`X-Forwarded-Host` of the proxy in front. Otherwise relative (RFC 8288 §3.2 resolves
 * it against the request URL): the `Host` header is the client's to write, and echoing it would let anyone
 * plant links to their own site in a cached answer. A forwarded scheme other than http(s), or a forwarded
 * host that is not a host[:port] (a path, credentials, a quote), gives the relative link.
 */
export function publicLink(config: Config, request: FastifyRequest, pathAndQuery: string): string {
  if (config.publicUrl !== undefined) return `${config.publicUrl}${pathAndQuery}`;
  if (config.readerTrustProxy && request.headers['x-forwarded-host'] !== undefined) {
    // fastify derives protocol and host from the X-Forwarded-* headers when trustProxy is on. They are
    // the proxy's to write, passed on from clients by some: only a scheme and a host[:port] make a link.
    const { protocol, host } = request;
    if ((protocol === 'http' || protocol === 'https') && HOST.test(host))
      return `${protocol}://${host}${pathAndQuery}`;
  }
  return pathAndQuery;
}

/** A host name, IPv4 or bracketed IPv6 address, with an optional port: nothing a URL could read otherwise. */
const HOST = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)(:\d{1,5})?$/;
