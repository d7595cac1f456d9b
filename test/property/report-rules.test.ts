import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isLatitude,
  isLongitude,
  isValidCode,
  isValidId,
  isValidText,
  REPORT_RULES,
} from '../../src/schema/report-rules.js';
import { validateWireReportWithZod } from '../../src/schema/report.js';

// The named predicates of report-rules.ts are what both fast paths call; the zod schema checks the same
// rules one by one to word each issue. Each predicate must accept exactly what zod accepts in that field.

const base = {
  id: 'r-1',
  status: 'SUBMITTED',
  destination: 'ROAD_CONTROL',
  category: null,
  description: null,
  location: { lat: 50.9, lng: 6.9 },
  address: null,
  createdAt: '2024-01-02T03:04:05.000Z',
  updatedAt: '2024-01-02T03:04:05.000Z',
};
const zodAccepts = (patch: Record<string, unknown>) => validateWireReportWithZod({ ...base, ...patch }).ok;

/** Strings near every rule's edges: blanks, control characters, lone surrogates, lengths around the limits. */
const edgyString = (max: number) =>
  fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom(
      '',
      ' ',
      '\t',
      '\u00a0',
      'IN PROGRESS',
      'a\u0000b',
      'x\u007f',
      'x\u0085',
      '\ud800',
      'a\udc00b',
    ),
    fc
      .tuple(fc.integer({ min: max - 2, max: max + 2 }), fc.constantFrom('a', ' ', '\u00e9', '😀', '𓀀'))
      .map(([n, c]) => c.repeat(Math.max(0, n))),
    // Characters past the BMP (two UTF-16 units each) around the limit and half of it, mixed with others.
    fc
      .tuple(fc.integer({ min: max / 2 - 2, max: max + 2 }), fc.integer({ min: 0, max: 2 }))
      .map(([n, k]) => `${'😀'.repeat(Math.max(0, n - k))}${'a'.repeat(k)}`),
  );

describe('the named report rules agree with the zod schema, field by field', () => {
  it('id', () => {
    fc.assert(
      fc.property(edgyString(REPORT_RULES.idMaxLength), (s) => {
        expect(isValidId(s)).toBe(zodAccepts({ id: s }));
      }),
    );
  });

  it('status and destination codes', () => {
    fc.assert(
      fc.property(edgyString(REPORT_RULES.codeMaxLength), (s) => {
        expect(isValidCode(s)).toBe(zodAccepts({ status: s }));
        expect(isValidCode(s)).toBe(zodAccepts({ destination: s }));
      }),
    );
  });

  it('free text', () => {
    fc.assert(
      fc.property(edgyString(40), (s) => {
        expect(isValidText(s)).toBe(zodAccepts({ description: s }));
      }),
    );
    const long = 'x'.repeat(REPORT_RULES.textMaxLength);
    expect(isValidText(long)).toBe(zodAccepts({ address: long }));
    expect(isValidText(`${long}x`)).toBe(zodAccepts({ address: `${long}x` }));
    // A million characters past the BMP are two million UTF-16 units: within the limit, as zod counts.
    const astral = '😀'.repeat(REPORT_RULES.textMaxLength);
    expect(isValidText(astral)).toBe(zodAccepts({ address: astral }));
    expect(isValidText(`${astral}x`)).toBe(zodAccepts({ address: `${astral}x` }));
  });

  it('coordinates', () => {
    const degrees = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true, min: -400, max: 400 }),
      fc.constantFrom(90, -90, 180, -180, 90.000001, -180.000001, 0, -0),
    );
    fc.assert(
      fc.property(degrees, (d) => {
        expect(isLatitude(d)).toBe(zodAccepts({ location: { lat: d, lng: 0 } }));
        expect(isLongitude(d)).toBe(zodAccepts({ location: { lat: 0, lng: d } }));
      }),
    );
  });
});
