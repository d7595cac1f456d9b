import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvProjectionHash } from '../../src/schema/csv-projection.js';
import { validateCsvReport } from '../../src/schema/report.js';
import { contentHash, type Report } from '../../src/schema/wire-format.js';

const base: Omit<Report, 'extra'> = {
  id: 'r1',
  status: 'SUBMITTED',
  destination: 'ROAD_CONTROL',
  category: null,
  description: '',
  lat: null,
  lng: null,
  address: null,
  createdAt: '2024-03-01T10:00:00.000Z',
  updatedAt: '2024-03-01T10:00:00.000Z',
};

function withExtra(entries: ReadonlyArray<readonly [string, unknown]>): Report {
  const extra = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of entries) extra[k] = v;
  return { ...base, extra: entries.length === 0 ? null : extra };
}

const hashOf = (r: Report) => csvProjectionHash(r, contentHash(r));

describe('csvProjectionHash', () => {
  it('is the same whatever the order of the unknown fields (a CSV row has the export’s column order)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.string({ minLength: 1 }), fc.jsonValue({ maxDepth: 1 })), {
          selector: ([k]) => k,
          maxLength: 6,
        }),
        (entries) => {
          const reversed = [...entries].reverse();
          expect(hashOf(withExtra(entries))).toBe(hashOf(withExtra(reversed)));
        },
      ),
    );
  });

  it('is the same for text fields given in code-unit order (the report is its own projection) as in any other order', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.string({ minLength: 1, unit: 'binary' }), fc.string({ unit: 'binary' })), {
          selector: ([k]) => k,
          minLength: 2,
          maxLength: 6,
        }),
        (entries) => {
          const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : 1));
          const rotated = [...sorted.slice(1), sorted[0]!];
          expect(hashOf(withExtra(sorted))).toBe(hashOf(withExtra(rotated)));
        },
      ),
    );
  });

  it('equals the hash of the CSV reading of the same report: typed values become cell text, NULL cells drop out', () => {
    const typed = withExtra([
      ['b', 5],
      ['a', true],
      ['c', null],
      ['d', ''],
      ['e', { x: [1, 'y'] }],
    ]);
    // The same report as CSV cells (lat/lng restated as NULL cells: a row holds text or NULL only).
    const row = validateCsvReport({
      ...base,
      lat: null,
      lng: null,
      e: '{"x":[1,"y"]}',
      d: '',
      c: null,
      a: 'true',
      b: '5',
    });
    expect(row.ok).toBe(true);
    if (!row.ok) return;
    expect(hashOf(row.report)).toBe(hashOf(typed));
  });

  it('differs when a value changes', () => {
    expect(hashOf(withExtra([['a', 1]]))).not.toBe(hashOf(withExtra([['a', 2]])));
  });
});
