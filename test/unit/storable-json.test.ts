import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { storableJson } from '../../src/util/storable-json.js';

const wellFormed = (text: string) => !/\p{Cs}/u.test(text);

describe('storableJson', () => {
  it('is JSON of the value, lone surrogates kept as the text of their escapes (property)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' })), (value) => {
        const back = JSON.parse(storableJson(value)) as Record<string, string>;
        const escaped = (s: string) => s.replace(/\p{Cs}/gu, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
        const expected = Object.fromEntries(Object.entries(value).map(([k, v]) => [escaped(k), escaped(v)]));
        expect(back).toEqual(expected);
        expect(
          wellFormed(storableJson(value)) && !/(^|[^\\])(\\\\)*\\ud[89a-f]/.test(storableJson(value)),
        ).toBe(true);
      }),
    );
  });

  it('leaves a literal backslash before "ud800" and a surrogate pair as they are', () => {
    expect(JSON.parse(storableJson({ m: '\\ud800 😀' }))).toEqual({ m: '\\ud800 😀' });
  });
});
