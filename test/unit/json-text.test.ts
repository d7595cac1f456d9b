import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countParsedKeys, countTextKeys } from '../../src/schema/json-key-count.js';
import {
  canonicalJsonText,
  extraFromJson,
  extraObjectJson,
  jsonDepth,
  scanJsonObject,
} from '../../src/schema/json-text.js';

// JSON texts with arbitrary spacing: fast-check's JSON values re-serialised with random indentation.
const spaced = fc
  .tuple(fc.dictionary(fc.string(), fc.jsonValue()), fc.constantFrom(0, 1, 2, '\t'))
  .map(([value, indent]) => ({ value, text: JSON.stringify(value, null, indent) }));

describe('json-text', () => {
  it('locates every top-level field and canonicalises it to what JSON.stringify writes', () => {
    fc.assert(
      fc.property(spaced, ({ value, text }) => {
        const scan = scanJsonObject(text);
        expect(scan.duplicate).toBeUndefined();
        expect(scan.fields.map((f) => f.key)).toEqual(Object.keys(value));
        for (const f of scan.fields) {
          expect(canonicalJsonText(text, f.start, f.end)).toBe(JSON.stringify(value[f.key]));
        }
        expect(countTextKeys(text)).toBe(countParsedKeys(JSON.parse(text)));
        expect(extraObjectJson(extraFromJson(text))).toBe(JSON.stringify(value));
      }),
      { numRuns: 500 },
    );
  });

  it('finds a repeated key at any depth, and the key counts tell', () => {
    fc.assert(
      fc.property(spaced, fc.string(), fc.jsonValue(), (o, key, v) => {
        // Repeat `key` inside a nested object of the record.
        const text = `{"a":[1,{"n":${`{${JSON.stringify(key)}:${JSON.stringify(v)}${o.text === '{}' ? '}' : `,${o.text.slice(1)}`}`}}]}`;
        const inner = JSON.parse(text) as unknown;
        const repeated = Object.hasOwn(o.value, key);
        expect(scanJsonObject(text).duplicate !== undefined).toBe(repeated);
        expect(countTextKeys(text) !== countParsedKeys(inner)).toBe(repeated);
        if (repeated) expect(scanJsonObject(text).duplicate).toEqual({ path: `a[1].n.${key}`, key });
      }),
      { numRuns: 500 },
    );
  });

  it('keeps numbers as sent and prototype-named keys as plain keys', () => {
    const text = '{ "__proto__" : {"a":1.0}, "constructor":1E+2, "n":12345678901234567890, "s":"\\u0041" }';
    const extra = extraFromJson(text);
    expect(Object.keys(extra)).toEqual(['__proto__', 'constructor', 'n', 's']);
    expect(extraObjectJson(extra)).toBe(
      '{"__proto__":{"a":1.0},"constructor":1E+2,"n":12345678901234567890,"s":"A"}',
    );
  });
});

describe('jsonDepth', () => {
  const depthOf = (v: unknown): number =>
    v !== null && typeof v === 'object'
      ? 1 + Math.max(0, ...Object.values(v as Record<string, unknown>).map(depthOf))
      : 0;

  it('gives the nesting of any JSON value, strings holding brackets and quotes included (property)', () => {
    const value = fc.jsonValue({ maxDepth: 6 });
    const tricky = fc.constantFrom('{', '}', '[', ']', '"', '\\', '\\"]}');
    fc.assert(
      fc.property(value, tricky, (v, s) => {
        expect(jsonDepth(JSON.stringify(v))).toBe(depthOf(v));
        expect(jsonDepth(JSON.stringify({ s, v }, null, 2))).toBe(1 + depthOf(v));
      }),
    );
  });

  it('measures any depth without recursion', () => {
    const n = 200_000;
    expect(jsonDepth(`${'{"a":['.repeat(n)}1${']}'.repeat(n)}`)).toBe(2 * n);
  });
});
