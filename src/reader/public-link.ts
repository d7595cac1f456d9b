import type { FastifyRequest } from 'fastify';
import type { Config } from '../config/config.js';

/**
 * A link to `pathAndQuery` (starting with `/`) for a response header such as `Link`. Absolute only from a
 * source the operator vouches for: REPORTS_PUBLIC_URL, else (with REPORTS_READER_TRUST_PROXY) the
 * `X-Forwarded-Proto`/`X-Forwarded-Host` of the proxy in front. Otherwise relative (RFC 8288 §3.2 resolves
 * it against the request URL): the `Host` header is the client's to write, and echoing it would let anyone
 * plant links to their own site in a cached answer.
 */
export function publicLink(config: Config, request: FastifyRequest, pathAndQuery: string): string {
  if (config.publicUrl !== undefined) return `${config.publicUrl}${pathAndQuery}`;
  if (config.readerTrustProxy && request.headers['x-forwarded-host'] !== undefined) {
    // fastify derives protocol and host from the X-Forwarded-* headers when trustProxy is on.
    return `${request.protocol}://${request.host}${pathAndQuery}`;
  }
  return pathAndQuery;
}
