import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvIdCell } from '../../src/schema/csv-id.js';
import { validateCsvReport, validateWireReport } from '../../src/schema/report.js';

// A report read through CSV equals its JSON reading: an id column written as floats (`17.0`, as pandas
// writes a column that once held a NaN) names the same reports as the JSON numbers it came from.

const fields = { status: 'SUBMITTED', destination: 'ROAD_CONTROL', createdAt: '2024-01-01T00:00:00Z' };
const idOf = (r: ReturnType<typeof validateWireReport>) => (r.ok ? r.report.id : undefined);

describe('a CSV id cell', () => {
  it('written as an integer with a zero fraction is the id its JSON number gives', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc.integer({ min: 1, max: 4 }),
        (n, zeros) => {
          const text = `${n}.${'0'.repeat(zeros)}`;
          const json = idOf(validateWireReport({ ...fields, ...(JSON.parse(`{"id":${text}}`) as object) }));
          const csv = idOf(validateCsvReport({ ...fields, id: text }));
          expect(json).toBe(String(n));
          expect(csv).toBe(json);
        },
      ),
    );
  });

  it('is kept as sent when it is not such a number', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (text) => {
        fc.pre(!/^-?(0|[1-9]\d*)\.0+$/.test(text));
        expect(csvIdCell(text)).toBe(text);
      }),
    );
    for (const text of ['0017', '2.10', '1.5', '1e3', '17.', '.0', '17.0 ', 'R-1.0']) {
      expect(csvIdCell(text)).toBe(text);
    }
  });
});
