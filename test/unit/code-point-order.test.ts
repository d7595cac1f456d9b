import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareCodePoints } from '../../src/util/code-point-order.js';

describe('compareCodePoints', () => {
  it("orders any two strings as their UTF-8 bytes do (DuckDB's and PostgreSQL's C order) (property)", () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.string({ unit: fc.constantFrom('a', 'Ａ', '\uffff', '😀', '\ue000', '\ud7ff', 'é') }),
    );
    fc.assert(
      fc.property(text, text, (a, b) => {
        const bytes = Buffer.compare(Buffer.from(a), Buffer.from(b));
        expect(Math.sign(compareCodePoints(a, b))).toBe(bytes);
      }),
      { numRuns: 2000 },
    );
  });

  it('puts a character past U+FFFF after one in U+E000–U+FFFF, where UTF-16 order does not', () => {
    expect(['😀', 'Ａ'].sort(compareCodePoints)).toEqual(['Ａ', '😀']);
    expect(['😀', 'Ａ'].sort()).toEqual(['😀', 'Ａ']);
  });
});
