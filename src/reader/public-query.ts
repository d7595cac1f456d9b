import type { FastifyReply, FastifyRequest } from 'fastify';
import { validatePublicQuery, type PublicEndpoint, type PublicQuery } from '../schema/public-query.js';
import { pageSizeOverLimit } from './page-size-limit.js';
import { sendApiError } from './send-api-error.js';

/**
 * Validates the query string of a public endpoint with the validation the simulator uses
 * (`validatePublicQuery`, so a bad query gets the identical 400 body naming the parameter), then the
 * reader's own `pageSize` maximum when `maxPageSize` is given. Sends the 400 itself.
 *
 * @returns the parsed query, or `null` when a 400 was sent
 */
export function publicQuery<E extends PublicEndpoint>(
  endpoint: E,
  request: FastifyRequest,
  reply: FastifyReply,
  maxPageSize?: number,
): PublicQuery<E> | null {
  const params = searchParams(request.url);
  const validation = validatePublicQuery(endpoint, params);
  if (!validation.ok) {
    sendApiError(reply, validation.status, validation.body);
    return null;
  }
  const pageSize = (validation.query as { pageSize?: number }).pageSize;
  if (maxPageSize !== undefined && pageSize !== undefined) {
    const refused = pageSizeOverLimit(endpoint, pageSize, params, maxPageSize);
    if (refused) {
      sendApiError(reply, 400, refused);
      return null;
    }
  }
  return validation.query;
}

/**
 * The query parameters of a request target (`/path?a=1&b=2`), in order, repeated ones kept, parsed as the
 * simulator parses them (WHATWG URL), so both servers see the same parameters.
 */
export function searchParams(target: string): URLSearchParams {
  return parsedTarget(target)?.searchParams ?? new URLSearchParams();
}

/** The decoded-as-sent path of a request target (WHATWG URL `pathname`), as the simulator routes by it. */
export function pathOf(target: string): string {
  return parsedTarget(target)?.pathname ?? '/';
}

/**
 * A request target as a URL: origin-form (`/path?query`, RFC 9112 §3.2.1) is a path, so `//a/b` is the path
 * `//a/b` and not the host `a`; absolute-form (`http://host/path`) is read as it stands.
 */
function parsedTarget(target: string): URL | undefined {
  const url = target.startsWith('/') ? `${BASE}${target}` : target;
  return URL.canParse(url) ? new URL(url) : undefined;
}

const BASE = 'http://reader.invalid';
