import type { FastifyReply, FastifyRequest } from 'fastify';
import type { LastSuccess } from './last-success.js';
import { parseHttpDate } from '../util/http-date.js';

/** `ETag` and (when a run succeeded) `Last-Modified` of what the reader serves. */
export interface Validators {
  /** A strong entity tag, quoted: `"<run id>"`, or `"empty"` before the first successful run. */
  etag: string;
  /** HTTP-date (RFC 9110 §5.6.7) of the last successful run's commit; absent before the first one. */
  lastModified?: string | undefined;
}

/**
 * The validators of the data state a successful run left (docs/sources.md, docs/reader.md: exports carry `ETag`/
 * `Last-Modified` from the last successful run that changed `reports`, see last-success.ts). Every reader
 * response is a function of that state only, so one tag serves every endpoint and query, as the
 * simulator's dataset version does.
 */
export function validatorsOf(last: LastSuccess | null): Validators {
  if (last === null) return { etag: '"empty"' };
  return { etag: `"${last.runId}"`, lastModified: new Date(last.finishedMs).toUTCString() };
}

/**
 * True when an `If-None-Match` header value names `etag` (RFC 9110 §13.1.2: weak comparison, so `W/` is
 * ignored; `*` matches any current representation). `undefined` (no header) never matches.
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === bare;
  });
}

/** The response headers of the validators (no `Last-Modified` before the first successful run). */
export function validatorHeaders(v: Validators): Record<string, string> {
  return v.lastModified === undefined ? { ETag: v.etag } : { ETag: v.etag, 'Last-Modified': v.lastModified };
}

/**
 * True when the client's copy is current, so the answer is `304 Not Modified` (RFC 9110 §13.2.2): an
 * `If-None-Match` header decides alone ({@link ifNoneMatchHits}); without one, `If-Modified-Since` matches
 * when `Last-Modified` (whole seconds) is not later than its date. An unparsable date is ignored.
 */
export function notModified(
  headers: { 'if-none-match'?: string | undefined; 'if-modified-since'?: string | undefined },
  v: Validators,
): boolean {
  const inm = headers['if-none-match'];
  if (inm !== undefined) return ifNoneMatchHits(inm, v.etag);
  const ims = headers['if-modified-since'];
  if (ims === undefined || v.lastModified === undefined) return false;
  const since = parseHttpDate(ims);
  const modified = parseHttpDate(v.lastModified);
  return since !== undefined && modified !== undefined && modified <= since;
}

/**
 * Answers `304 Not Modified` with the validators and no body (RFC 9110 §15.4.5) when the client's copy is
 * current ({@link notModified}); returns whether it did, so the route ends there.
 */
export function replyNotModified(request: FastifyRequest, reply: FastifyReply, v: Validators): boolean {
  if (!notModified(request.headers, v)) return false;
  reply.code(304).headers(validatorHeaders(v)).send();
  return true;
}
