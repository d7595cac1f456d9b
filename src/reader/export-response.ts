import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ReaderContext } from './reader-context.js';
import { lastSuccess } from './last-success.js';
import { withQueryTimeout } from './query-timeout.js';
import { ReadTransaction } from './read-transaction.js';
import { ifNoneMatchHits, validatorHeaders, validatorsOf, type Validators } from './validators.js';

/** An export response being prepared: its read transaction and the validators of the state it reads. */
export interface OpenExport {
  tx: ReadTransaction;
  validators: Validators;
}

/**
 * Opens the read transaction of a streamed response (GeoJSON, CSV, NDJSON) and reads its validators. When
 * `If-None-Match` names the current `ETag` it answers `304 Not Modified` itself (RFC 9110 §15.4.5: the
 * validators, no body) and returns `null`.
 *
 * @param what names the endpoint in timeout messages (`GET /api/v1/public/reports.csv`)
 * @throws SyncError `READER_QUERY_TIMEOUT` / `READER_CLOSED`, answered 503 by the reader's error handler
 */
export async function openExport(
  ctx: ReaderContext,
  request: FastifyRequest,
  reply: FastifyReply,
  what: string,
): Promise<OpenExport | null> {
  const timeoutMs = ctx.config.readerQueryTimeoutMs;
  const tx = await ReadTransaction.begin(ctx.pool, timeoutMs);
  let validators: Validators;
  try {
    validators = validatorsOf(
      await withQueryTimeout(tx.connection, timeoutMs, `The validators of ${what}`, () =>
        lastSuccess(tx.connection),
      ),
    );
  } catch (err) {
    await tx.finish(false);
    throw err;
  }
  if (ifNoneMatchHits(request.headers['if-none-match'], validators.etag)) {
    await tx.finish(true);
    reply.code(304).headers(validatorHeaders(validators)).send();
    return null;
  }
  return { tx, validators };
}

/**
 * Sends a streamed body: `pieces` (text, e.g. one string per DuckDB chunk) go out with backpressure through
 * a `Readable` that pulls the next piece only when the socket has room, so memory stays at about one chunk
 * (DESIGN.md §7: exports in constant memory). The transaction ends when the body ends, fails or the client
 * goes away. `HEAD` gets the headers only, and no query runs for it.
 *
 * A failure after the headers went out cannot become an error body any more: it is logged once, here, and
 * the response is cut off (no final chunk), so the client sees an incomplete body, never a complete-looking
 * wrong one.
 */
export async function sendExport(
  request: FastifyRequest,
  reply: FastifyReply,
  open: OpenExport,
  headers: Record<string, string>,
  pieces: () => AsyncIterable<string>,
): Promise<FastifyReply> {
  reply.code(200).headers({ ...headers, ...validatorHeaders(open.validators) });
  if (request.method === 'HEAD') {
    await open.tx.finish(true);
    return reply.send(Readable.from([]));
  }
  const { tx } = open;
  let started = false;
  const log = request.log;
  async function* body(): AsyncGenerator<string> {
    started = true;
    let ok = false;
    try {
      for await (const piece of pieces()) yield piece;
      ok = true;
    } catch (err) {
      log.error({ err, url: request.url }, 'export failed after the headers were sent; body cut off');
      throw err;
    } finally {
      await tx.finish(ok);
    }
  }
  const stream = Readable.from(body(), { objectMode: false, highWaterMark: 64 * 1024 });
  // A client gone before the first read: the generator never ran, so its finally cannot end the transaction.
  stream.once('close', () => {
    if (!started) void tx.finish(false);
  });
  return reply.send(stream);
}
