/** The whole body in a buffer of its own (not Node's shared pool: it is transferred to a decode worker). */
export async function readBody(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    // Copy: undici may hand out views on pooled memory.
    const buf = Buffer.from(chunk);
    chunks.push(buf);
    size += buf.length;
  }
  const whole = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for (const chunk of chunks) {
    chunk.copy(whole, at);
    at += chunk.length;
  }
  return whole;
}
