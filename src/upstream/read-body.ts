/** A bound on {@link readBody}: bytes read at most, and the error past them. */
export interface BodyLimit {
  maxBytes: number;
  /** The error thrown once the body is over `maxBytes` (given the bytes read so far). */
  tooLarge: (bytes: number) => Error;
}

/**
 * The whole body in a buffer of its own (not Node's shared pool: it is transferred to a decode worker).
 *
 * @throws `limit.tooLarge(bytes)` as soon as the body is over `limit.maxBytes` (nothing more is read; the
 *   caller destroys the body), or the body's own error
 */
export async function readBody(body: AsyncIterable<Uint8Array>, limit?: BodyLimit): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    // Copy: undici may hand out views on pooled memory.
    const buf = Buffer.from(chunk);
    chunks.push(buf);
    size += buf.length;
    if (limit !== undefined && size > limit.maxBytes) throw limit.tooLarge(size);
  }
  const whole = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for (const chunk of chunks) {
    chunk.copy(whole, at);
    at += chunk.length;
  }
  return whole;
}
