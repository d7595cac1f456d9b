import { TextDecoder } from 'node:util';
import { SyncError } from '../util/errors.js';

/** Charset labels that name UTF-8 itself, or a subset of it (US-ASCII). */
const UTF8 = new Set(['utf-8', 'utf8', 'unicode-1-1-utf-8', 'us-ascii', 'ascii']);
/** Labels of ISO-8859-1 proper: decoded byte for byte to U+0000–U+00FF (WHATWG would read windows-1252). */
const LATIN1 = new Set(['iso-8859-1', 'iso8859-1', 'iso_8859-1', 'latin1', 'l1', 'cp819', 'ibm819']);

/** The `charset` parameter of a `Content-Type` header, lower-cased and unquoted, or undefined. */
export function charsetOf(contentType: string | undefined): string | undefined {
  const m = /;\s*charset\s*=\s*("?)([^";\s]+)\1/i.exec(contentType ?? '');
  return m?.[2]?.toLowerCase();
}

/**
 * A decoder from the declared `charset` to UTF-8 bytes, or `undefined` when the body is UTF-8 already
 * (no charset, `utf-8`, `us-ascii`: then invalid bytes are quarantined, see extract/utf8.ts). ISO-8859-1
 * is decoded byte for byte; any other label the WHATWG Encoding Standard knows (windows-1252, shift_jis…)
 * through `TextDecoder` with `fatal: true`, so a byte the charset does not define fails loudly instead of
 * becoming U+FFFD. Feed chunks in order; `end()` flushes a sequence split at the last chunk.
 *
 * @throws SyncError `UNSUPPORTED_CHARSET` for a label no decoder knows (the export is refused, not guessed)
 */
export function charsetDecoder(
  charset: string | undefined,
  url: string,
): { write(chunk: Uint8Array): Buffer; end(): Buffer } | undefined {
  if (charset === undefined || UTF8.has(charset)) return undefined;
  if (LATIN1.has(charset)) {
    const latin1 = (chunk: Uint8Array) =>
      Buffer.from(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('latin1'), 'utf8');
    return { write: latin1, end: () => Buffer.alloc(0) };
  }
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

/** `body` decoded from the declared charset to UTF-8 (itself when it is UTF-8). Throws as {@link charsetDecoder}. */
export function toUtf8(body: Buffer, charset: string | undefined, url: string): Buffer {
  const decoder = charsetDecoder(charset, url);
  if (!decoder) return body;
  return Buffer.concat([decoder.write(body), decoder.end()]);
}

/** A chunk stream decoded from the declared charset to UTF-8 (unchanged when UTF-8). Throws as {@link charsetDecoder}. */
export function utf8Chunks(
  chunks: AsyncIterable<Uint8Array>,
  charset: string | undefined,
  url: string,
): AsyncIterable<Uint8Array> {
  const decoder = charsetDecoder(charset, url);
  if (!decoder) return chunks;
  return (async function* () {
    for await (const chunk of chunks) yield decoder.write(chunk);
    const rest = decoder.end();
    if (rest.length > 0) yield rest;
  })();
}
