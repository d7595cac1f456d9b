import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KnownLines } from '../../src/normalize/known-lines.js';

const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const halves = (h: bigint): [number, number] => [Number(h >> 32n), Number(BigInt.asIntN(32, h))];

/** A set filled as the loader fills it: ascending signed hashes (room for `room`: more buckets). */
async function filled(hashes: bigint[], room = 0): Promise<KnownLines> {
  const sorted = [...new Set(hashes)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const set = await KnownLines.withCapacity('ndjson', Math.max(room, sorted.length));
  for (const h of sorted) set.add(...halves(h));
  return set;
}

describe('KnownLines (packed, sorted buckets)', () => {
  it('holds exactly the hashes added: every one found, none that differs in any single bit', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(int64, { maxLength: 3000 }),
        fc.array(int64, { maxLength: 200 }),
        // Room for up to 4M hashes: 2^16 to 2^19 buckets, so the bits a bucket fixes vary.
        fc.integer({ min: 0, max: 4_000_000 }),
        async (held, others, room) => {
          const set = await filled(held, room);
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

  it('refuses hashes out of order, counts a repeated one once, and stays within its capacity', async () => {
    const set = await KnownLines.withCapacity('ndjson', 2);
    expect(set.add(0, 5)).toBe(true);
    expect(set.add(0, 5)).toBe(false);
    expect(() => set.add(0, 4)).toThrow(RangeError);
    // Low halves compare unsigned within the same high half: -1 (0xffffffff) is above 5.
    expect(set.add(0, -1)).toBe(true);
    expect(() => set.add(1, 0)).toThrow(/capacity/);
    expect(set.size).toBe(2);
  });

  it('costs about 7 bytes a hash at 10M, where the open-addressing table took 30', async () => {
    const set = await KnownLines.withCapacity('ndjson', 10_000_000);
    expect(set.bytes / 10_000_000).toBeLessThan(7);
  });
});
