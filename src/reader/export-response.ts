import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ConnectionPool } from './connection-pool.js';
import type { ReaderContext } from './reader-context.js';
import { readRunState } from './last-success.js';
import { withQueryTimeout } from './query-timeout.js';
import { ReadTransaction } from './read-transaction.js';
import { replyNotModified, validatorHeaders, validatorsOf, type Validators } from './validators.js';

/** An export response being prepared: its read transaction and the validators of the state it reads. */
export interface OpenExport {
  tx: ReadTransaction;
  validators: Validators;
}

/**
 * What {@link sendExport} needs of an open export, whatever the store: a read transaction (or snapshot)
 * that `finish` ends (`ok` false rolls back), and the validators of the state it reads.
 */
export interface ExportSnapshot {
  tx: { finish(ok: boolean): Promise<void> };
  validators: Validators;
}

/**
 * Opens the read transaction of an export response (GeoJSON, CSV, NDJSON, stats) and reads its validators.
 * When the client's copy is current (`If-None-Match` / `If-Modified-Since`, see {@link notModified}) it
 * answers `304 Not Modified` itself (RFC 9110 §15.4.5: the validators, no body) and returns `null`.
 *
 * @param what names the endpoint in timeout messages (`GET /api/v1/public/reports.csv`)
 * @param pool where the transaction's connection comes from: the export pool for bodies written to a
 *   spool file (held until the body is written), the query pool for short answers (stats)
 * @throws SyncError `READER_BUSY` / `READER_QUERY_TIMEOUT` / `READER_CLOSED`, answered 503 by the error handler
 */
export async function openExport(
  ctx: ReaderContext,
  request: FastifyRequest,
  reply: FastifyReply,
  what: string,
  pool: ConnectionPool = ctx.pool,
): Promise<OpenExport | null> {
  const timeoutMs = ctx.config.readerQueryTimeoutMs;
  const tx = await ReadTransaction.begin(pool, timeoutMs);
  let validators: Validators;
  try {
    const runs = await withQueryTimeout(tx.connection, timeoutMs, `The validators of ${what}`, () =>
      readRunState(tx.connection),
    );
    validators = validatorsOf(runs.changed);
  } catch (err) {
    await tx.finish(false);
    throw err;
  }
  if (replyNotModified(request, reply, validators)) {
    await tx.finish(true);
    return null;
  }
  return { tx, validators };
}

/**
 * Sends an export body. `pieces` (text, e.g. one string per DuckDB chunk) are written to a spool file
 * (spool-cache.ts) at the warehouse's pace inside the read transaction, which then ends; the response
 * sends the file as it grows, so the first bytes leave as soon as the first piece is written and the
 * connection goes back to the pool when the body is complete, whatever the client's pace: a client that
 * reads slowly holds a file descriptor, never a warehouse connection. Memory stays at about one piece
 * while spooling and one read buffer while sending. Later requests for the same body of the same data
 * state (`key`) reuse the file (with its `Content-Length` once complete). `HEAD` gets the headers only,
 * and no query runs for it.
 *
 * A failure before the first piece is answered as any other error (503 for a timeout or a busy warehouse,
 * 500 otherwise). A failure after it (a later chunk past the query timeout) cuts the response off: the
 * body was sent without a length (chunked), so the client sees an incomplete transfer, never a short
 * body that looks whole.
 *
 * @param key identifies the body among the exports of one data state (endpoint and parameters)
 */
export async function sendExport(
  ctx: Pick<ReaderContext, 'spools'>,
  request: FastifyRequest,
  reply: FastifyReply,
  open: ExportSnapshot,
  headers: Record<string, string>,
  key: string,
  pieces: () => AsyncIterable<string>,
): Promise<FastifyReply> {
  const { tx } = open;
  if (request.method === 'HEAD') {
    await tx.finish(true);
    reply.code(200).headers({ ...headers, ...validatorHeaders(open.validators) });
    return reply.send(Readable.from([]));
  }
  let body;
  try {
    body = await ctx.spools.open(
      open.validators.etag,
      key,
      async (write) => {
        let ok = false;
        try {
          for await (const piece of pieces()) await write(piece);
          ok = true;
        } finally {
          await tx.finish(ok);
        }
      },
      () => tx.finish(true),
    );
  } catch (err) {
    await tx.finish(false);
    throw err;
  }
  const length = body.bytes === undefined ? {} : { 'Content-Length': String(body.bytes) };
  reply.code(200).headers({ ...headers, ...validatorHeaders(open.validators), ...length });
  return reply.send(Readable.from(body.read(), { objectMode: false }));
}
