import { describe, expect, it } from 'vitest';
import { readBody } from '../../src/upstream/read-body.js';

describe('readBody', () => {
  it('reads no further than its limit: the error comes with the first chunk past it', async () => {
    let pulled = 0;
    async function* endless() {
      for (;;) {
        pulled++;
        yield new Uint8Array(1024);
        if (pulled > 1_000) return; // so a reader without a limit still ends
      }
    }
    const tooLarge = (bytes: number) => new Error(`over: ${bytes}`);
    const outcome = await readBody(endless(), { maxBytes: 16 * 1024, tooLarge }).then(
      (whole) => `read whole: ${whole.length} bytes`,
      (err: Error) => err.message,
    );
    expect(outcome).toBe('over: 17408');
    expect(pulled).toBe(17);
  });

  it('reads a body up to its limit whole, in a buffer of its own', async () => {
    async function* three() {
      yield* [Buffer.from('ab'), Buffer.from('cd'), Buffer.from('ef')];
    }
    const whole = await readBody(three(), { maxBytes: 6, tooLarge: () => new Error('over') });
    expect(whole.toString()).toBe('abcdef');
    expect(whole.buffer.byteLength).toBe(6); // not a view on Node's shared pool
  });
});
