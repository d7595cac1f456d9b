import type { FastifyReply } from 'fastify';
import { apiError, type ApiErrorBody } from '../schema/public-query.js';

/**
 * Sends the public error body `{"error": {"code", "message", "details"?}}` (docs/sources.md) as the simulator
 * does (simulator/respond.ts): `application/json; charset=utf-8` with `Content-Length`. The body is built by
 * the caller from fixed text and request facts only: never an exception message, stack trace or SQL.
 */
export function sendApiError(
  reply: FastifyReply,
  status: number,
  body: ApiErrorBody,
  headers: Record<string, string> = {},
): FastifyReply {
  return reply
    .code(status)
    .headers(headers)
    .header('Content-Type', 'application/json; charset=utf-8')
    .send(JSON.stringify(body));
}

/** {@link sendApiError} with a body built from a code and a message (no details). */
export function sendError(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): FastifyReply {
  return sendApiError(reply, status, apiError(code, message), headers);
}
