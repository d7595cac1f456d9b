import { PassThrough, pipeline, Transform, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate, createInflateRaw } from 'node:zlib';
import { SyncError } from '../util/errors.js';

/** What every upstream request accepts (RFC 9110 §12.5.3); the answer is decoded by {@link decodeBody}. */
export const ACCEPT_ENCODING = 'gzip, deflate, br';

/** A body as it arrived and as decoded, with the bytes counted on the wire. */
export interface DecodedBody {
  /** The decoded body (the wire body when it is not encoded). */
  body: Readable;
  /** Bytes received on the wire so far (compressed, when the body is). */
  wireBytes(): number;
  /** The content codings applied, in the order the server applied them (`[]` for identity). */
  encodings: string[];
}

/**
 * Decodes a response body by its `Content-Encoding` (`gzip`/`x-gzip`, `deflate` — zlib-wrapped or, as some
 * servers send it, raw —, `br`; several codings are undone last first), counting the wire bytes. A gzip
 * file (`contentType` `application/gzip`) is read from inside, with a `Content-Encoding` or without
 * ({@link codingsOf}). The decoded stream is a pipeline: destroying it destroys the wire body, and an error
 * of any stage reaches it.
 *
 * @throws SyncError `CONTENT_ENCODING_UNSUPPORTED` (not retryable) for a coding not asked for (e.g. `zstd`)
 */
export function decodeBody(
  wire: Readable,
  contentEncoding: string | undefined,
  url: string,
  contentType?: string,
): DecodedBody {
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  const codings = codingsOf(contentEncoding, contentType);
  const encodings = (codings ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '' && e !== 'identity');
  const decoders = encodings.reverse().map((e) => decoderFor(e, url));
  encodings.reverse();
  // A gzip file sent with a Content-Encoding: strictly, the coding wraps the file (two gzip layers), but
  // servers also label the file itself so (one layer). The bytes under the coding tell.
  if (codings === contentEncoding && encodings.length > 0 && isGzipType(contentType)) {
    decoders.push(sniffing((head) => (isGzipStart(head) ? createGunzip() : new PassThrough())));
  }
  const stages = [wire, counter, ...decoders];
  const body = pipeline(stages as [Readable, ...Transform[]], () => undefined) as unknown as Readable;
  return { body, wireBytes: () => bytes, encodings };
}

/**
 * The codings to undo for an answer: its `Content-Encoding`, or `gzip` for a body sent without one as a gzip
 * file (`Content-Type: application/gzip`, RFC 6713; `application/x-gzip`), as a static `reports.ndjson.gz`
 * or `reports.csv.gz` behind the export's URL is served: the export is what the file holds.
 */
export function codingsOf(
  contentEncoding: string | undefined,
  contentType: string | undefined,
): string | undefined {
  const coded = (contentEncoding ?? '')
    .split(',')
    .some((e) => !['', 'identity'].includes(e.trim().toLowerCase()));
  if (coded || !isGzipType(contentType)) return contentEncoding;
  return 'gzip';
}

function isGzipType(contentType: string | undefined): boolean {
  return /^application\/(?:x-)?gzip\s*(?:;|$)/i.test(contentType ?? '');
}

/** The gzip magic number (RFC 1952 §2.3.1). */
function isGzipStart(head: Buffer): boolean {
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}

function decoderFor(encoding: string, url: string): Transform {
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'br':
      return createBrotliDecompress();
    case 'deflate':
      return deflateDecoder();
    default:
      throw new SyncError(
        'CONTENT_ENCODING_UNSUPPORTED',
        `${url} answered with Content-Encoding ${encoding}, which was not asked for (Accept-Encoding: ${ACCEPT_ENCODING})`,
        { context: { url, encoding } },
      );
  }
}

/**
 * `deflate` is meant to be zlib-wrapped (RFC 9110 §8.4.1.2), but servers also send raw deflate: the first
 * two bytes tell (a zlib header is a multiple of 31 with compression method 8).
 */
function deflateDecoder(): Transform {
  return sniffing((head) =>
    (head[0]! & 0x0f) === 8 && (head[0]! * 256 + head[1]!) % 31 === 0 ? createInflate() : createInflateRaw(),
  );
}

/**
 * A stage that passes the body through the transform `choose` picks by the body's first two bytes (fewer
 * only when the body is shorter; an empty body chooses nothing).
 */
function sniffing(choose: (head: Buffer) => Transform): Transform {
  let inner: Transform | undefined;
  let head = Buffer.alloc(0);
  const start = (): Transform => {
    const chosen = choose(head);
    chosen.on('data', (c: Buffer) => self.push(c));
    chosen.once('error', (err) => self.destroy(err));
    inner = chosen;
    return chosen;
  };
  const self = new Transform({
    transform(chunk: Buffer, _enc, done) {
      let target = inner;
      if (target === undefined) {
        head = Buffer.concat([head, chunk]);
        if (head.length < 2) return done();
        target = start();
        chunk = head;
      }
      if (target.write(chunk)) done();
      else target.once('drain', () => done());
    },
    flush(done) {
      let target = inner;
      if (target === undefined) {
        if (head.length === 0) return done();
        target = start();
        target.write(head);
      }
      target.once('end', () => done());
      target.end();
    },
  });
  return self;
}
