import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage } from '../util/errors.js';
import type { AdvanceSummary } from './dataset.js';
import type { FaultSpec } from './faults.js';
import type { RequestLogEntry } from './request-log.js';
import { sendError, sendJson } from './respond.js';

/** Path prefix of the test-only admin endpoints (never under the public prefix). */
export const ADMIN_PREFIX = '/__admin';

/** What the admin endpoints can do: the same capabilities as the in-process simulator handle. */
export interface AdminControls {
  advanceDays(days: number): AdvanceSummary;
  setFaults(faults: ReadonlyArray<FaultSpec | string>): void;
  clearFaults(): void;
  faults(): Array<FaultSpec & { used: number }>;
  requests(): RequestLogEntry[];
  clearRequests(): void;
}

const ALLOWED: Record<string, string> = {
  '/advance': 'POST',
  '/faults': 'GET, POST, DELETE',
  '/requests': 'GET, DELETE',
};
const MAX_BODY = 1024 * 1024;
const MAX_DAYS = 3650;

/**
 * The admin endpoints for tests and demos:
 * - `POST /__admin/advance?days=N` (default 1, at most 3650) → the {@link AdvanceSummary};
 * - `GET /__admin/faults` → the faults with their `used` counters; `POST /__admin/faults` with a JSON
 *   array (or `{"faults": [...]}`) of fault objects or compact strings → replaces the set;
 *   `DELETE /__admin/faults` → clears it;
 * - `GET /__admin/requests` → the request log; `DELETE /__admin/requests` → clears it.
 * Errors use the public error body: 400 `INVALID_QUERY`/`INVALID_FAULT`, 404, 405 with `Allow`.
 */
export async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  controls: AdminControls,
): Promise<void> {
  const path = url.pathname.slice(ADMIN_PREFIX.length);
  const allowed = ALLOWED[path];
  if (allowed === undefined) {
    sendError(
      req,
      res,
      404,
      'NOT_FOUND',
      `No admin endpoint ${url.pathname} (known: ${Object.keys(ALLOWED)
        .map((p) => ADMIN_PREFIX + p)
        .join(', ')}).`,
    );
    return;
  }
  const method = req.method ?? 'GET';
  if (!allowed.split(', ').includes(method)) {
    sendError(
      req,
      res,
      405,
      'METHOD_NOT_ALLOWED',
      `${method} is not allowed on ${url.pathname} (allowed: ${allowed}).`,
      {
        Allow: allowed,
      },
    );
    return;
  }
  if (path === '/advance') {
    const text = url.searchParams.get('days') ?? '1';
    const days = /^\d{1,4}$/.test(text) ? Number(text) : Number.NaN;
    if (!(days >= 0 && days <= MAX_DAYS)) {
      sendError(
        req,
        res,
        400,
        'INVALID_QUERY',
        `days must be an integer from 0 to ${MAX_DAYS} (got ${JSON.stringify(text)}).`,
      );
      return;
    }
    sendJson(req, res, 200, controls.advanceDays(days));
    return;
  }
  if (path === '/requests') {
    if (method === 'DELETE') controls.clearRequests();
    sendJson(req, res, 200, method === 'DELETE' ? { cleared: true } : controls.requests());
    return;
  }
  if (method === 'DELETE') {
    controls.clearFaults();
    sendJson(req, res, 200, { faults: [] });
    return;
  }
  if (method === 'POST') {
    let items: unknown;
    try {
      const body = JSON.parse(await readBody(req)) as unknown;
      items = Array.isArray(body) ? body : (body as { faults?: unknown } | null)?.faults;
      if (!Array.isArray(items)) throw new Error('expected a JSON array of faults, or {"faults": [...]}');
      controls.setFaults(items as Array<FaultSpec | string>);
    } catch (err) {
      sendError(req, res, 400, 'INVALID_FAULT', errorMessage(err));
      return;
    }
  }
  sendJson(req, res, 200, { faults: controls.faults() });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new Error(`request body over ${MAX_BODY} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
