import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KnownLines } from '../../src/normalize/known-lines.js';

const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const halves = (h: bigint): [number, number] => [Number(h >> 32n), Number(BigInt.asIntN(32, h))];

/** A set built as the loader builds it (two passes over the hashes, in any order). */
async function filled(hashes: bigint[]): Promise<KnownLines> {
  const distinct = [...new Set(hashes)];
  return KnownLines.build('ndjson', distinct.length, async (visit) => {
    for (const h of distinct) visit(...halves(h));
  });
}

describe('KnownLines (packed, sorted buckets)', () => {
  it('holds exactly the hashes added: every one found, none that differs in any single bit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(int64, { maxLength: 3000 }),
        fc.array(int64, { maxLength: 200 }),
        async (held, others) => {
          const set = await filled(held);
          const members = new Set(held);
          expect(set.size).toBe(members.size);
          for (const h of held) expect(set.has(h)).toBe(true);
          // A hash one bit away from a member shares its bucket or its stored bits: the near misses.
          for (const h of held.slice(0, 50)) {
            for (let bit = 0n; bit < 64n; bit += 7n) {
              const near = BigInt.asIntN(64, h ^ (1n << bit));
              expect(set.has(near)).toBe(members.has(near));
            }
          }
          for (const h of others) expect(set.has(h)).toBe(members.has(h));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('finds the hashes of lines whose hash it holds, and no others', async () => {
    const empty = await KnownLines.empty('ndjson');
    const lines = Array.from({ length: 2000 }, (_, i) => `{"id":"R-${i}","n":${i * 7}}`);
    const hashes = lines.map((l) => empty.check(l).hash);
    const set = await filled(hashes.filter((_, i) => i % 3 === 0));
    lines.forEach((line, i) => expect(set.check(line)).toEqual({ hash: hashes[i], known: i % 3 === 0 }));
    // The same bytes as text or as UTF-8 give the same answer.
    expect(set.check(new TextEncoder().encode(lines[3]!))).toEqual(set.check(lines[3]!));
  });

  it('holds every hash when buckets fix more bits (600,000 hashes: 2^17 buckets)', async () => {
    let x = 7;
    const next = () => (x = (Math.imul(x, 1103515245) + 12345) | 0);
    const his = Int32Array.from({ length: 600_000 }, next);
    const los = Int32Array.from({ length: 600_000 }, next);
    const set = await KnownLines.build('ndjson', his.length, async (visit) => {
      for (let i = 0; i < his.length; i++) visit(his[i]!, los[i]!);
    });
    const hash = (i: number) => (BigInt(his[i]!) << 32n) | BigInt(los[i]! >>> 0);
    for (let i = 0; i < his.length; i += 7) expect(set.has(hash(i))).toBe(true);
    // Near misses of a member (one bit flipped) are no members: 2^-64 odds of a random collision.
    for (let i = 0; i < 2000; i++) {
      for (let bit = 0n; bit < 64n; bit += 3n)
        expect(set.has(BigInt.asIntN(64, hash(i) ^ (1n << bit)))).toBe(false);
    }
  });

  it('marks the lines read: the hashes not read are the rest, each read one gives its last line', async () => {
    const empty = await KnownLines.empty('ndjson');
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 400 }),
        // Lines read: an index into the held lines (or past them: an unknown line), in reading order.
        fc.array(fc.integer({ min: 0, max: 500 }), { maxLength: 800 }),
        async (held, reads) => {
          const lines = Array.from({ length: 501 }, (_, i) => `{"id":"R-${i}"}`);
          const hashes = lines.map((l) => empty.check(l).hash);
          const set = await KnownLines.build(
            'ndjson',
            held,
            async (visit) => {
              for (const h of hashes.slice(0, held)) visit(...halves(h));
            },
            true,
          );
          const last = new Map<number, number>();
          reads.forEach((i, at) => {
            const { known } = set.check(lines[i]!, at + 1);
            expect(known).toBe(i < held);
            if (known) last.set(i, at + 1);
          });
          set.countKnown(last.size);
          const unseen: bigint[] = [];
          set.unseen((h) => unseen.push(h));
          const expected = hashes.slice(0, held).filter((_, i) => !last.has(i));
          expect(unseen.sort()).toEqual(expected.sort());
          hashes.forEach((h, i) => expect(set.lineOf(h)).toBe(last.get(i) ?? 0));
          expect(set.knownRead).toBe(last.size);
          // A read from the start again forgets them.
          set.resetSeen();
          const all: bigint[] = [];
          set.unseen((h) => all.push(h));
          expect(all.length).toBe(held);
          expect(set.knownRead).toBe(0);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('marks nothing, and gives every hash as not read, when built without tracking', async () => {
    const empty = await KnownLines.empty('ndjson');
    const hashes = ['a', 'b', 'c'].map((l) => empty.check(l).hash);
    const set = await filled(hashes);
    expect(set.tracksSeen).toBe(false);
    set.check('a', 5);
    expect(set.lineOf(hashes[0]!)).toBe(0);
    const unseen: bigint[] = [];
    set.unseen((h) => unseen.push(h));
    expect(unseen.sort()).toEqual([...hashes].sort());
  });

  it('refuses to build when its two passes see other hashes than counted', async () => {
    let pass = 0;
    const build = KnownLines.build('ndjson', 3, async (visit) => {
      pass++;
      for (let i = 0; i < (pass === 1 ? 3 : 4); i++) visit(i, i);
    });
    await expect(build).rejects.toThrow(/placed 4 hashes, expected 3/);
    await expect(KnownLines.build('ndjson', 5, async (visit) => visit(1, 1))).rejects.toThrow(/counted 1/);
  });

  it('costs under 7 bytes a hash at 10M, where the open-addressing table took 30', async () => {
    const n = 10_000_000;
    const set = await KnownLines.build('ndjson', n, async (visit) => {
      for (let i = 0; i < n; i++) visit(Math.imul(i, 0x9e3779b1), i);
    });
    expect(set.size).toBe(n);
    expect(set.has((BigInt(Math.imul(12345, 0x9e3779b1)) << 32n) | 12345n)).toBe(true);
    expect(set.bytes / n).toBeLessThan(7);
  });
});
