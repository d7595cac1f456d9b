import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJsonLine } from '../../src/normalize/json-line.js';

describe('parseJsonLine (stream-json’s JSONL parse step)', () => {
  it('gives what JSON.parse gives for any JSON text, and its error message for anything else', () => {
    fc.assert(
      fc.property(fc.oneof(fc.json(), fc.string()), (text) => {
        let expected: { value: unknown } | { error: string };
        try {
          expected = { value: JSON.parse(text) as unknown };
        } catch (err) {
          expected = { error: (err as Error).message };
        }
        expect(parseJsonLine(text)).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('a bad line after a good one still reports its own error', () => {
    expect(parseJsonLine('{"id":"a"}')).toEqual({ value: { id: 'a' } });
    const bad = parseJsonLine('{"id":');
    expect(bad).toHaveProperty('error');
    expect((bad as { error: string }).error).not.toBe('');
  });
});
