import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CsvRows } from '../../src/reader/csv-rows.js';
import type { Report } from '../../src/schema/wire-format.js';
import { reportCsvCells } from '../../src/schema/report-csv-cells.js';
import { toCsvRecords } from '../../src/schema/to-csv-records.js';

const text = fc.string({ unit: fc.constantFrom('a', 'b', ',', '"', '\n', '\r', ' ', 'é', '') });
const value = fc.oneof(
  text,
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(text),
  fc.dictionary(text, text),
);
const key = fc.constantFrom('k1', 'k2', 'k3', 'weird,key', '"q"', 'absent');

const report = fc.record({
  id: text,
  status: text,
  destination: text,
  category: fc.option(text, { nil: null }),
  description: fc.option(text, { nil: null }),
  lat: fc.option(fc.double({ noNaN: true }), { nil: null }),
  lng: fc.option(fc.double({ noNaN: true }), { nil: null }),
  address: fc.option(text, { nil: null }),
  createdAt: fc.constant('2024-01-02T03:04:05.000Z'),
  updatedAt: fc.constant('2024-01-02T03:04:05.000Z'),
  extra: fc.option(fc.dictionary(key, value), { nil: null }),
}) as fc.Arbitrary<Report>;

describe('CsvRows', () => {
  it('writes the same bytes as the simulator rows (reportCsvCells + toCsvRecords) for any report and columns', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { maxLength: 6 }),
        fc.array(report, { maxLength: 5 }),
        (columns, reports) => {
          const rows = new CsvRows(columns);
          for (const r of reports) expect(rows.row(r)).toBe(toCsvRecords([reportCsvCells(r, columns)]));
        },
      ),
      { numRuns: 500 },
    );
  });
});
