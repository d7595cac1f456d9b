import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SpoolCache, type SpooledBody } from '../../src/reader/spool-cache.js';

/** A promise with its resolve, to hold one step of a request while others run. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** The whole body, read as a response sends it (which closes its file). */
async function text(body: SpooledBody): Promise<string> {
  const pieces: Buffer[] = [];
  for await (const piece of body.read()) pieces.push(piece);
  return Buffer.concat(pieces).toString();
}

describe('SpoolCache', () => {
  it('a request sharing a body can always open it, whatever other states and keys do meanwhile', async () => {
    // Requests interleave at their awaits: one shares a finished body and is held while it gives its
    // connection back (onShared); meanwhile requests of other data states and keys arrive (a sync committed:
    // a newer state; a response that began before the commit: an older one).
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('v1', 'v2', 'v3'), fc.constantFrom('a', 'b', 'c')), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.integer({ min: 0, max: 20_000 }),
        async (others, keepBytes) => {
          const spools = new SpoolCache(keepBytes);
          try {
            const body = (text: string) => async (write: (t: string) => Promise<void>) => write(text);
            const first = await spools.open('v1', 'a', body('v1 a'), async () => undefined);
            await text(first);
            const held = gate();
            const shared = spools.open('v1', 'a', body('v1 a'), () => held.promise);
            const rest = others.map(([etag, key]) =>
              spools.open(etag, key, body(`${etag} ${key}`), async () => undefined),
            );
            for (const r of await Promise.all(rest)) await text(r);
            held.open();
            const got = await shared;
            expect(await text(got)).toBe('v1 a');
          } finally {
            spools.close();
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
