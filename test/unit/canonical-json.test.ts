import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, toWire, type Report } from '../../src/schema/wire-format.js';

const text = fc.string({ unit: 'binary', maxLength: 20 });
const orNull = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
const coordinate = orNull(fc.double({ noNaN: true, noDefaultInfinity: true }));

const report: fc.Arbitrary<Report> = fc.record({
  id: text,
  status: text,
  destination: text,
  category: orNull(text),
  description: orNull(text),
  lat: coordinate,
  lng: coordinate,
  address: orNull(text),
  createdAt: text,
  updatedAt: text,
  extra: fc.constant(null),
});

describe('canonicalJson', () => {
  it('writes the known fields exactly as JSON.stringify of the wire object (escapes, numbers, null location)', () => {
    fc.assert(
      fc.property(report, (r) => {
        expect(canonicalJson(r)).toBe(JSON.stringify(toWire(r)));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('canonicalJson beyond the typed shape', () => {
  it('leaves out a known field that is undefined, as JSON.stringify does (property)', () => {
    const maybeMissing = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined, freq: 3 });
    const loose = fc.record({
      id: maybeMissing(text),
      status: maybeMissing(text),
      destination: text,
      category: maybeMissing(orNull(text)),
      description: orNull(text),
      lat: maybeMissing(coordinate),
      lng: coordinate,
      address: maybeMissing(orNull(text)),
      createdAt: text,
      updatedAt: maybeMissing(text),
      extra: fc.constant(null),
    });
    fc.assert(
      fc.property(loose, (r) => {
        const report = r as unknown as Report;
        expect(canonicalJson(report)).toBe(JSON.stringify(toWire(report)));
      }),
      { numRuns: 1000 },
    );
  });

  it('writes unknown fields after the known ones, as the wire object holds them (property)', () => {
    // Keys that are not array indices: an object lists those first, whatever their insertion order.
    const extra = fc.dictionary(
      fc.string({ maxLength: 8 }).map((k) => `k${k}`),
      fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null)),
      { maxKeys: 4 },
    );
    fc.assert(
      fc.property(report, extra, (r, x) => {
        const withExtra = { ...r, extra: Object.keys(x).length > 0 ? x : null };
        expect(canonicalJson(withExtra)).toBe(JSON.stringify(toWire(withExtra)));
      }),
      { numRuns: 1000 },
    );
  });
});
