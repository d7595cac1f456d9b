import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalNames } from '../../src/schema/field-names.js';
import { setUpstreamReading } from '../../src/schema/upstream-reading.js';
import { MODELLED_KEYS } from '../../src/schema/wire-format.js';

describe('canonicalNames (CSV headers and JSON keys in another style)', () => {
  it('renames a modelled field written in another case or style, keeps every other name', () => {
    expect(
      canonicalNames([
        'ID',
        'Status',
        'DESTINATION',
        'created_at',
        'Updated At',
        ' lat ',
        'LNG',
        'Ward',
        'channel',
      ]),
    ).toEqual(['id', 'status', 'destination', 'createdAt', 'updatedAt', 'lat', 'lng', 'Ward', 'channel']);
  });

  it('keeps both when the exact name is there too, and both when two columns fold to one field', () => {
    expect(canonicalNames(['id', 'ID', 'status'])).toEqual(['id', 'ID', 'status']);
    expect(canonicalNames(['id', 'created_at', 'CreatedAt'])).toEqual(['id', 'created_at', 'CreatedAt']);
  });

  it('never gives two different columns the same name, nor renames a name it does not fold to a field (property)', () => {
    const styled = fc.constantFrom(...MODELLED_KEYS).chain((key) =>
      fc.constantFrom(
        key,
        key.toUpperCase(),
        ` ${key}`,
        key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
      ),
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(styled, fc.string({ maxLength: 6 })), { maxLength: 12 }), (names) => {
        const out = canonicalNames(names);
        expect(out).toHaveLength(names.length);
        out.forEach((name, i) => {
          if (name !== names[i]) {
            expect(MODELLED_KEYS.has(name)).toBe(true);
            expect(names).not.toContain(name);
            // One name given twice is one column repeated: renamed at each place, never merged with another.
            expect(out.filter((n) => n === name)).toHaveLength(names.filter((n) => n === names[i]).length);
          }
        });
      }),
      { numRuns: 500 },
    );
  });

  it('with REPORTS_FIELD_NAMES, renames the mapped names by the same rules (property)', () => {
    const fieldNames = { service_request_id: 'id', requested_datetime: 'createdAt', agency: 'destination' };
    setUpstreamReading({ fieldNames, timeZone: undefined });
    try {
      expect(
        canonicalNames(['service_request_id', 'status', 'agency', 'requested_datetime', 'long']),
      ).toEqual(['id', 'status', 'destination', 'createdAt', 'long']);
      // The field's own name wins over a mapped one, as over a restyled one.
      expect(canonicalNames(['id', 'service_request_id'])).toEqual(['id', 'service_request_id']);
      const names = fc.constantFrom(...Object.keys(fieldNames), ...MODELLED_KEYS, 'ID', 'Agency', 'x');
      fc.assert(
        fc.property(fc.array(names, { maxLength: 10 }), (given) => {
          const out = canonicalNames(given);
          out.forEach((name, i) => {
            if (name === given[i]) return;
            expect(name).toBe(
              Object.hasOwn(fieldNames, given[i]!) ? fieldNames[given[i] as keyof typeof fieldNames] : name,
            );
            expect(given).not.toContain(name);
            expect(out.filter((n) => n === name)).toHaveLength(given.filter((n) => n === given[i]).length);
          });
        }),
        { numRuns: 500 },
      );
    } finally {
      setUpstreamReading(undefined);
    }
  });
});
