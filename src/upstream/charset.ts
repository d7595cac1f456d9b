import { TextDecoder } from 'node:util';
import { SyncError } from '../util/errors.js';

/** Charset labels that name UTF-8 itself, or a subset of it (US-ASCII). */
const UTF8 = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8', 'us-ascii', 'ascii']);

/** The `charset` parameter of a `Content-Type` header, lower-cased and unquoted, or undefined. */
export function charsetOf(contentType: string | undefined): string | undefined {
  const m = /;\s*charset\s*=\s*("?)([^";\s]+)\1/i.exec(contentType ?? '');
  return m?.[2]?.toLowerCase();
}

/**
 * A decoder from the declared `charset` to UTF-8 bytes, or `undefined` when the body is UTF-8 already
 * (no charset, `utf-8`, `us-ascii`: then invalid bytes are quarantined, see extract/utf8.ts). Any other
 * label the WHATWG Encoding Standard knows (windows-1252, shift_jis…) is decoded as that standard reads it,
 * through `TextDecoder` with `fatal: true`: `iso-8859-1` and `latin1` as windows-1252, as browsers and
 * `fetch` do, since servers label windows-1252 text so (byte 0x80 is `€`, not the control U+0080), so a byte the charset does not define fails loudly instead of
 * becoming U+FFFD. Feed chunks in order; `end()` flushes a sequence split at the last chunk.
 *
 * @throws SyncError `UNSUPPORTED_CHARSET` for a label no decoder knows (the export is refused, not guessed)
 */
export function charsetDecoder(
  charset: string | undefined,
  url: string,
): { write(chunk: Uint8Array): Buffer; end(): Buffer } | undefined {
  if (charset === undefined || UTF8.has(charset)) return undefined;
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charset, { fatal: true });
  } catch {
    throw new SyncError(
      'UNSUPPORTED_CHARSET',
      `${url} declares charset=${charset}, which this reader cannot decode: refused rather than read as UTF-8 ` +
        'with substituted characters',
      { context: { url, charset } },
    );
  }
  const wrap = (f: () => string) => {
    try {
      return Buffer.from(f(), 'utf8');
    } catch (err) {
      throw new SyncError(
        'INVALID_CHARSET_DATA',
        `${url} holds bytes that are not valid ${charset} (its declared charset): refused rather than read ` +
          `with substituted characters (${err instanceof Error ? err.message : String(err)})`,
        { context: { url, charset } },
      );
    }
  };
  return {
    write: (chunk) => wrap(() => decoder.decode(chunk, { stream: true })),
    end: () => wrap(() => decoder.decode()),
  };
}

/**
 * The encoding a byte order mark at the start of `head` names, or undefined without one (the WHATWG
 * Encoding Standard's "BOM sniff", which its `decode` lets override the label: a body labelled `utf-16`
 * but sent big-endian with `FE FF`, or sent as UTF-16 without a label, is read by its mark).
 */
export function bomEncoding(head: Uint8Array): 'utf-8' | 'utf-16be' | 'utf-16le' | undefined {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return 'utf-8';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  return undefined;
}

/**
 * {@link charsetDecoder} for a body whose first bytes are `head`: a byte order mark decides the encoding
 * over the declared label ({@link bomEncoding}). A UTF-16 mark is consumed by the decoder; a UTF-8 one is
 * left for the parsers, which strip it.
 */
function bodyDecoder(head: Uint8Array, charset: string | undefined, url: string) {
  return charsetDecoder(bomEncoding(head) ?? charset, url);
}

/**
 * `body` decoded to UTF-8 from its byte order mark's encoding, else from the declared charset (itself
 * when that is UTF-8). Throws as {@link charsetDecoder}.
 */
export function toUtf8(body: Buffer, charset: string | undefined, url: string): Buffer {
  const decoder = bodyDecoder(body, charset, url);
  if (!decoder) return body;
  return Buffer.concat([decoder.write(body), decoder.end()]);
}

/** Longest byte order mark (UTF-8's): the bytes read before the encoding is decided. */
const BOM_BYTES = 3;

/**
 * A chunk stream decoded to UTF-8 as {@link toUtf8} decodes a body (the encoding is decided on its first
 * three bytes). Throws as {@link charsetDecoder}.
 */
export function utf8Chunks(
  chunks: AsyncIterable<Uint8Array>,
  charset: string | undefined,
  url: string,
): AsyncIterable<Uint8Array> {
  return (async function* () {
    let head = Buffer.alloc(0);
    let decoder: ReturnType<typeof charsetDecoder> | null = null;
    for await (const chunk of chunks) {
      if (decoder !== null) {
        yield decoder ? decoder.write(chunk) : chunk;
        continue;
      }
      head = Buffer.concat([head, chunk]);
      if (head.length < BOM_BYTES) continue;
      decoder = bodyDecoder(head, charset, url);
      yield decoder ? decoder.write(head) : head;
    }
    if (decoder === null) {
      decoder = bodyDecoder(head, charset, url);
      if (head.length > 0) yield decoder ? decoder.write(head) : head;
    }
    const rest = decoder?.end();
    if (rest && rest.length > 0) yield rest;
  })();
}
