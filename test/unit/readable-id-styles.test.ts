import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { BlockPacker } from '../../src/extract/block-packer.js';
import { readableJsonId } from '../../src/extract/readable-id.js';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { decodeBlock } from '../../src/normalize/ndjson-block.js';
import { recordIdOf } from '../../src/normalize/reject.js';
import { setUpstreamReading } from '../../src/schema/upstream-reading.js';
import { DEFAULT_EXTRA_LIMITS } from '../../src/schema/value-rules.js';

// The id a quarantined line is kept under is the id its report would have: read from its bytes
// (readableJsonId: invalid UTF-8, malformed JSON, an over-long line's prefix) as from its parsed value
// (recordIdOf), under the key the validator reads the id from (`id`, `ID`, a REPORTS_FIELD_NAMES name).

afterEach(() => setUpstreamReading(undefined));

const FIELDS = '"status":"SUBMITTED","destination":"ROAD_CONTROL","createdAt":"2024-01-02T00:00:10.000Z"';

async function decode(line: Buffer) {
  const packer = new BlockPacker(4096);
  packer.add(line, 1);
  return decodeBlock(packer.take(), await KnownLines.empty('ndjson'), 1024, DEFAULT_EXTRA_LIMITS);
}

describe('the id of a quarantined line, whatever the key style', () => {
  it('reads the id under a key in another style, or a mapped name, from the bytes as from the parsed value (property)', () => {
    const idKey = fc.constantFrom('id', 'ID', 'Id', ' id', 'service_request_id');
    const id = fc.oneof(
      fc.string({ minLength: 1, maxLength: 6 }).filter((s) => s.trim() !== ''),
      fc.nat(),
      fc.constant(12345678901234567890n),
    );
    const other = fc.constantFrom('status', 'x', 'Status', 'id_2', 'ID', 'iD', 'service_request_id');
    fc.assert(
      fc.property(idKey, id, fc.array(other, { maxLength: 3 }), fc.boolean(), (key, value, keys, mapped) => {
        setUpstreamReading(
          mapped ? { fieldNames: { service_request_id: 'id' }, timeZone: undefined } : undefined,
        );
        const text = (v: unknown) => (typeof v === 'bigint' ? String(v) : JSON.stringify(v));
        const fields = [[key, value], ...keys.map((k, i) => [k, i] as const)];
        const line = `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${text(v)}`).join(',')}}`;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          return;
        }
        // A key given twice: the parsed value keeps the last, the bytes cannot tell which one is meant.
        if (Object.keys(parsed as object).length !== fields.length) return;
        expect(readableJsonId(Buffer.from(line))).toBe(recordIdOf(parsed, line));
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps a line with a bad byte under the id its valid twin is stored with (`ID`)', async () => {
    const good = Buffer.from(`{"ID":"R-7",${FIELDS},"note":"ok"}`);
    const bad = Buffer.from(good);
    bad[bad.length - 4] = 0xff;
    const accepted = await decode(good);
    expect(accepted.loaded).toBe(1);
    expect(Buffer.from(accepted.rows.bytes).toString()).toContain('"id":"R-7"');
    const rejected = await decode(bad);
    expect(rejected.rejects[0]!.recordId).toBe('R-7');
  });

  it('keeps a malformed line under the id REPORTS_FIELD_NAMES names', async () => {
    setUpstreamReading({ fieldNames: { service_request_id: 'id' }, timeZone: undefined });
    const rejected = await decode(Buffer.from(`{"service_request_id":"S-1",${FIELDS},"note":}`));
    expect(rejected.rejects[0]!.recordId).toBe('S-1');
  });
});
