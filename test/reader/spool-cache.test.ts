import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SpoolCache, type SpooledBody } from '../../src/reader/spool-cache.js';
import { spoolTag } from '../../src/reader/spool-folders.js';

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

/** A production of `pieces` pieces, one per macrotask, recording how far it got and whether it ended. */
function slowBody(pieces: number) {
  const state = { written: 0, ended: false, error: undefined as unknown };
  const produce = async (write: (t: string) => Promise<void>) => {
    try {
      for (let i = 0; i < pieces; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        await write(`piece ${i}\n`);
        state.written++;
      }
    } catch (err) {
      state.error = err;
      throw err;
    } finally {
      // Where the reader gives its warehouse connection back (export-response.ts).
      state.ended = true;
    }
  };
  return { state, produce };
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  expect(done()).toBe(true);
}

describe('SpoolCache: a production nobody reads any more', () => {
  it('stops once every response reading it has ended, and the next request produces the body afresh', async () => {
    const spools = new SpoolCache(1 << 20);
    try {
      const first = slowBody(5000);
      const body = await spools.open('v1', 'a', first.produce, async () => undefined);
      const reading = body.read();
      expect((await reading.next()).done).toBe(false);
      // The client leaves: the response's stream ends its reading.
      await reading.return(undefined);
      await until(() => first.state.ended);
      expect(first.state.error).toBeInstanceOf(Error);
      expect(first.state.written).toBeLessThan(5000);

      const again = slowBody(50);
      const next = await spools.open('v1', 'a', again.produce, async () => undefined);
      expect(await text(next)).toBe(Array.from({ length: 50 }, (_, i) => `piece ${i}\n`).join(''));
      expect(again.state.error).toBeUndefined();
    } finally {
      spools.close();
    }
  });

  it('goes on while one of the responses sharing it still reads', async () => {
    const spools = new SpoolCache(1 << 20);
    try {
      const shared = slowBody(300);
      const leaving = await spools.open('v1', 'a', shared.produce, async () => undefined);
      const staying = await spools.open('v1', 'a', slowBody(1).produce, async () => undefined);
      const reading = leaving.read();
      await reading.next();
      await reading.return(undefined);
      expect(await text(staying)).toBe(Array.from({ length: 300 }, (_, i) => `piece ${i}\n`).join(''));
      expect(shared.state).toMatchObject({ written: 300, ended: true, error: undefined });
    } finally {
      spools.close();
    }
  });

  it('never stops while a request is still opening it (waiting for its first piece)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 39 }),
        async (n, leaveAt) => {
          const spools = new SpoolCache(1 << 20);
          try {
            const p = slowBody(n);
            const opening = [
              spools.open('v', 'k', p.produce, async () => undefined),
              spools.open('v', 'k', slowBody(1).produce, async () => undefined),
            ];
            const [a, b] = await Promise.all(opening);
            const reading = a!.read();
            for (let i = 0; i < Math.min(leaveAt, n); i++) await reading.next();
            await reading.return(undefined);
            expect(await text(b!)).toBe(Array.from({ length: n }, (_, i) => `piece ${i}\n`).join(''));
          } finally {
            spools.close();
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it('stops for a response whose reading never started (its client gone before the first read)', async () => {
    const spools = new SpoolCache(1 << 20);
    try {
      const p = slowBody(5000);
      const body = await spools.open('v1', 'a', p.produce, async () => undefined);
      // The response's stream was destroyed before it first pulled: only return() is called.
      await body.read().return(undefined);
      await until(() => p.state.ended);
      expect(p.state.written).toBeLessThan(5000);
    } finally {
      spools.close();
    }
  });

  it('a request arriving while an abandoned body gives its connection back gets the whole body', async () => {
    const spools = new SpoolCache(1 << 20);
    try {
      const releasing = gate();
      const joined = gate();
      let stopped = false;
      // Giving the connection back (a ROLLBACK) takes a while after the write that found no reader.
      const produce = async (write: (t: string) => Promise<void>) => {
        try {
          for (let i = 0; i < 5000; i++) {
            await new Promise((resolve) => setImmediate(resolve));
            await write(`old ${i}\n`);
          }
        } catch (err) {
          stopped = true;
          releasing.open();
          await joined.promise;
          throw err;
        }
      };
      const body = await spools.open('v1', 'a', produce, async () => undefined);
      const reading = body.read();
      await reading.next();
      await reading.return(undefined);
      await releasing.promise;
      const late = spools.open('v1', 'a', slowBody(20).produce, async () => undefined);
      joined.open();
      expect(stopped).toBe(true);
      expect(await text(await late)).toBe(Array.from({ length: 20 }, (_, i) => `piece ${i}\n`).join(''));
    } finally {
      spools.close();
    }
  });
});

describe('SpoolCache: folders left by a reader that was killed', () => {
  it('removes those of dead processes of this host and PID namespace when it first spools, no other', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'spool-stale-'));
    const before = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    const first = new SpoolCache(1 << 20);
    const second = new SpoolCache(1 << 20);
    try {
      const tag = spoolTag();
      // The highest pid Linux hands out is 4,194,304: this one is no process.
      const dead = join(tmp, `reports-sync-reader-${tag}-4194305-abc123`);
      const live = join(tmp, `reports-sync-reader-${tag}-${process.ppid}-def456`);
      // Another container sharing the folder: its ids are not ours to judge.
      const elsewhere = join(
        tmp,
        `reports-sync-reader-${tag === 'ffffffff' ? '00000000' : 'ffffffff'}-4194305-x`,
      );
      const other = join(tmp, 'unrelated-folder');
      for (const dir of [dead, live, elsewhere, other]) {
        mkdirSync(dir);
        writeFileSync(join(dir, '1.body'), 'x');
      }
      const body = await first.open(
        'v1',
        'a',
        async (write) => write('first\n'),
        async () => undefined,
      );
      expect(await text(body)).toBe('first\n');
      expect([dead, live, elsewhere, other].map((dir) => existsSync(dir))).toEqual([false, true, true, true]);
      // A second reader in the same process leaves the first one's folder alone.
      const again = await second.open(
        'v1',
        'a',
        async (write) => write('second\n'),
        async () => undefined,
      );
      expect(await text(again)).toBe('second\n');
      const cached = await first.open(
        'v1',
        'a',
        async () => Promise.reject(new Error('not again')),
        async () => undefined,
      );
      expect(await text(cached)).toBe('first\n');
      // A temp folder cleaner removed the folders: the next body is spooled in a new one.
      for (const name of readdirSync(tmp))
        if (name.startsWith('reports-sync-reader-')) rmSync(join(tmp, name), { recursive: true });
      const afresh = await first.open(
        'v2',
        'a',
        async (write) => write('afresh\n'),
        async () => undefined,
      );
      expect(await text(afresh)).toBe('afresh\n');
    } finally {
      first.close();
      second.close();
      if (before === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = before;
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
