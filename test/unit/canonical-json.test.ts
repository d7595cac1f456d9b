import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, toWire, type Report } from '../../src/schema/report.js';

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
