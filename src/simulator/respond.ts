import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { apiError, type ApiErrorBody } from '../schema/public-query.js';

/**
 * Small HTTP helpers shared by the simulator routes: JSON bodies, error bodies in the public shape
 * (docs/sources.md), and the validators (`ETag`, `Last-Modified`) of a data state.
 */

/** Sends a complete JSON body with `Content-Length` (`HEAD`: headers only). */
export function sendJson(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: OutgoingHttpHeaders = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/** Sends `{"error": {"code", "message", "details"?}}` with the given status. */
export function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: OutgoingHttpHeaders = {},
): void {
  sendApiError(req, res, status, apiError(code, message), headers);
}

/** Sends a prepared error body (e.g. the 400 of `validatePublicQuery`). */
export function sendApiError(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: ApiErrorBody,
  headers: OutgoingHttpHeaders = {},
): void {
  sendJson(req, res, status, body, headers);
}

/** The validators of a data state: a strong `ETag` from the version and an HTTP-date `Last-Modified`. */
export interface Validators {
  etag: string;
  lastModified: string;
}

/** Builds {@link Validators} for a version string and the instant the state began. */
export function validatorsOf(version: string, lastModified: Date): Validators {
  return { etag: `"${version}"`, lastModified: lastModified.toUTCString() };
}

/**
 * True when `If-None-Match` names the given entity tag (weak comparison, RFC 9110 §13.1.2: `W/` is ignored;
 * `*` matches anything).
 */
export function ifNoneMatchHits(req: IncomingMessage, etag: string): boolean {
  const header = req.headers['if-none-match'];
  if (header === undefined) return false;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === bare;
  });
}

/** Answers `304 Not Modified` with the validators (no body). */
export function sendNotModified(res: ServerResponse, validators: Validators): void {
  res.writeHead(304, { ETag: validators.etag, 'Last-Modified': validators.lastModified });
  res.end();
}
