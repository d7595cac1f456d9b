import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { apiError } from '../schema/public-query.js';

/** What node's HTTP parser refused, as the reader answers it: status, error code, message. */
const ANSWERS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    'HEADERS_TOO_LARGE',
    'The request line and headers are larger than this server reads (16 KiB): shorten the URL or the headers.',
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'REQUEST_TIMEOUT', 'The request did not arrive in time.'],
};

/**
 * Answers a request that node's HTTP parser refused before any route saw it (fastify's
 * `clientErrorHandler`): a request head over node's 16 KiB limit (431), a head not received in time (408),
 * anything else the parser rejects, such as an unknown method or a malformed header (400). The body has the
 * API's error shape `{"error": {"code", "message"}}` (docs/reader.md), where fastify's default writes
 * `{"error", "message", "statusCode"}`; a HEAD request gets the head only. The connection is then closed: the
 * parser cannot read on after it.
 */
export function answerClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] = ANSWERS[err.code ?? ''] ?? [
    400,
    'BAD_REQUEST',
    'The request could not be read as HTTP/1.1 (an unknown method, or a malformed request line or header).',
  ];
  const body = JSON.stringify(apiError(code, message));
  if (!socket.writable) return void socket.destroy();
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\nConnection: close\r\n\r\n' +
      (isHead(err.rawPacket) ? '' : body),
  );
}

// An answer to HEAD carries no content (RFC 9110 §9.3.2): a client would read the body as the next answer.
function isHead(packet: unknown): boolean {
  return Buffer.isBuffer(packet) && packet.subarray(0, 5).toString('latin1') === 'HEAD ';
}
