import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readableJsonId } from '../../src/extract/readable-id.js';
import { recordIdOf } from '../../src/normalize/reject.js';

const INVALID = [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]];

describe('readableJsonId', () => {
  it('reads the id of a line broken anywhere else: bad bytes, malformed JSON, a cut prefix', () => {
    const id = fc.oneof(
      fc.string({ minLength: 1, unit: 'grapheme' }).filter((s) => s.trim() !== ''),
      fc.nat(),
    );
    const other = fc.dictionary(
      fc.string().filter((k) => k !== 'id'),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 4 },
    );
    fc.assert(
      fc.property(id, other, other, fc.constantFrom(...INVALID), fc.nat(), (id, before, after, bad, cut) => {
        const head = JSON.stringify(before).slice(0, -1);
        const idField = `${head.length > 1 ? ',' : ''}"id" : ${JSON.stringify(id)}`;
        const tail = JSON.stringify(after).slice(1);
        const line = Buffer.from(`${head}${idField}${tail.length > 1 ? `,${tail}` : tail}`);
        const expected = String(id);
        expect(readableJsonId(line)).toBe(expected);
        // Invalid bytes anywhere past the id's token and the byte after it (in a string or not: malformed).
        const idEnd = Buffer.byteLength(`${head}${idField}`);
        const at = idEnd + 1 + (cut % (line.length - idEnd));
        const broken = Buffer.concat([line.subarray(0, at), Buffer.from(bad), line.subarray(at)]);
        expect(readableJsonId(broken)).toBe(expected);
        // A prefix (an over-long line's kept part) that ends past the id.
        expect(readableJsonId(line.subarray(0, at))).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('gives no id when the id itself is broken, given twice, blank or missing', () => {
    const id = (text: string | Buffer) => readableJsonId(Buffer.isBuffer(text) ? text : Buffer.from(text));
    expect(id(Buffer.concat([Buffer.from('{"id":"a'), Buffer.from([0xff]), Buffer.from('b","x":1}')]))).toBe(
      undefined,
    );
    expect(id('{"id":"a","x":1,"id":"b"}')).toBe(undefined);
    expect(id('{"id":"  ","x":1}')).toBe(undefined);
    expect(id('{"x":{"id":"nested"},"y":1}')).toBe(undefined);
    expect(id('{"id":"cut')).toBe(undefined);
    expect(id('[{"id":"a"}]')).toBe(undefined);
    expect(id('{"x":[1,{"id":2}],"id":"top"')).toBe('top');
  });

  it('keeps the digits of an integer id past 2^53 − 1, which JSON.parse reads as another integer', () => {
    const big = fc.bigInt({ min: 2n ** 53n, max: 10n ** 30n });
    fc.assert(
      fc.property(big, fc.boolean(), (n, negative) => {
        const digits = `${negative ? '-' : ''}${n}`;
        const line = `{"status":1,"id":${digits},"x":[2]}`;
        expect(readableJsonId(Buffer.from(line))).toBe(digits);
        expect(recordIdOf(JSON.parse(line), line)).toBe(digits);
        // Without the text the parsed number names another report: no id rather than a wrong one.
        expect(recordIdOf(JSON.parse(line))).toBe(undefined);
      }),
    );
    expect(recordIdOf({ id: 9007199254740991 })).toBe('9007199254740991');
    expect(recordIdOf({ id: 42 }, '{"id":42.0}')).toBe('42');
    // A zero fraction: its digits, as the validator and a CSV cell read them.
    expect(readableJsonId(Buffer.from('{"id":9007199254740993.0}'))).toBe('9007199254740993');
    // Not plain digits: the exact integer cannot be told from the token.
    expect(readableJsonId(Buffer.from('{"id":1.5e20}'))).toBe(undefined);
    expect(readableJsonId(Buffer.from('{"id":1e400}'))).toBe(undefined);
  });
});
