import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalNames } from '../../src/schema/field-names.js';
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

  it('never gives two columns the same name, nor renames a name it does not fold to a field (property)', () => {
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
            expect(out.filter((n) => n === name)).toHaveLength(1);
          }
        });
      }),
      { numRuns: 500 },
    );
  });
});
