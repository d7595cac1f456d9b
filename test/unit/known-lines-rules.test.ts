import { hash } from 'node:crypto';
import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import { BlockPacker } from '../../src/extract/block-packer.js';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { decodeBlock } from '../../src/normalize/ndjson-block.js';
import { DEFAULT_EXTRA_LIMITS } from '../../src/schema/value-rules.js';

// A line whose reading changed with the rules is read again: a line hash staged under earlier rules must not
// match it, or the known-line skip keeps what the earlier rules made of it while a fresh load reads it anew.

/** The hash an NDJSON line had under line-hash rules version `v` (no upstream reading settings). */
async function hashUnderVersion(v: number, line: string): Promise<bigint> {
  const { h64Raw } = await xxhash();
  const seed = hash('md5', `reports-sync/line-hash/v${v}\u0000ndjson\u0000`, 'buffer').readBigUInt64LE(0);
  return BigInt.asIntN(64, h64Raw(Buffer.from(line), seed));
}

async function knownSet(hashes: bigint[]): Promise<KnownLines> {
  return KnownLines.build('ndjson', hashes.length, async (visit) => {
    for (const h of hashes) visit(Number(h >> 32n), Number(BigInt.asIntN(32, h)));
  });
}

/** The line decoded fresh, and decoded with a set holding its hash under line-hash rules version `v`. */
async function freshAndStoredUnder(v: number, line: string) {
  const packer = new BlockPacker(4096);
  packer.add(Buffer.from(line), 1);
  const block = packer.take();
  const known = await knownSet([await hashUnderVersion(v, line)]);
  const fresh = decodeBlock(block, await KnownLines.empty('ndjson'), 1024, DEFAULT_EXTRA_LIMITS);
  const again = decodeBlock(block, known, 1024, DEFAULT_EXTRA_LIMITS);
  return { fresh, again };
}

describe('known lines across reading-rule changes', () => {
  it('reads again a line the fast lane took with an unknown `Lat` under version 4 (the general path reads it as `lat`)', async () => {
    const line =
      '{"id":"R-1","status":"SUBMITTED","destination":"ROAD_CONTROL","category":null,"description":null,' +
      '"location":{"lat":53.5,"lng":10},"address":null,"createdAt":"2024-01-02T00:00:10.000Z",' +
      '"updatedAt":"2024-01-02T00:00:10.000Z","Lat":1}';
    // Version 4 stored this line's report (the fast lane took `Lat` as an unknown field).
    const { fresh, again } = await freshAndStoredUnder(4, line);
    expect(fresh.rejected).toBe(1);
    expect(again).toEqual(fresh);
  });

  it('reads again a line version 5 stored without a location (a GeoJSON Point with an altitude), now located', async () => {
    const line =
      '{"id":"R-1","status":"SUBMITTED","destination":"ROAD_CONTROL","category":null,"description":null,' +
      '"location":{"type":"Point","coordinates":[10,53.5,12]},"address":null,' +
      '"createdAt":"2024-01-02T00:00:10.000Z","updatedAt":"2024-01-02T00:00:10.000Z"}';
    const { fresh, again } = await freshAndStoredUnder(5, line);
    expect(fresh.rejected).toBe(0);
    expect(fresh.loaded).toBe(1);
    expect(again).toEqual(fresh);
  });

  it('reads again a line stored under larger unknown-field limits once REPORTS_EXTRA_MAX_* are lowered', async () => {
    const line =
      '{"id":"R-1","status":"SUBMITTED","destination":"ROAD_CONTROL","category":null,"description":null,' +
      '"location":null,"address":null,"createdAt":"2024-01-02T00:00:10.000Z",' +
      '"updatedAt":"2024-01-02T00:00:10.000Z","a":1,"b":2,"c":3}';
    const packer = new BlockPacker(4096);
    packer.add(Buffer.from(line), 1);
    const block = packer.take();
    // The run before read it with the default limits (1,000 keys), and stored its report.
    const stored = (await KnownLines.empty('ndjson')).check(line).hash;
    const limits = { ...DEFAULT_EXTRA_LIMITS, maxKeys: 2 };
    const known = await KnownLines.build(
      'ndjson',
      1,
      async (visit) => visit(Number(stored >> 32n), Number(BigInt.asIntN(32, stored))),
      false,
      limits,
    );
    const fresh = decodeBlock(block, await KnownLines.empty('ndjson', limits), 1024, limits);
    expect(fresh.rejected).toBe(1);
    expect(decodeBlock(block, known, 1024, limits)).toEqual(fresh);
  });
});
