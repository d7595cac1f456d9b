/** Passes chunks through while reporting their sizes (bytes) to `add`. */
export async function* countBytes(
  chunks: AsyncIterable<Uint8Array>,
  add: (n: number) => void,
): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    add(chunk.byteLength);
    yield chunk;
  }
}
