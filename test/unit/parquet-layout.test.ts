import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { duckdbApi } from '../../src/warehouse/duckdb-api.js';
import {
  fileStem,
  keyRange,
  keySql,
  keysBetween,
  parquetParts,
  rowsOfKeysSql,
  type Period,
} from '../../src/warehouse/parquet-layout.js';

const reports = parquetParts(['report_rows']).find((p) => p.folder === 'reports')!;
const PERIODS: Period[] = ['day', 'week', 'month', 'year'];

describe('the Parquet layout', () => {
  it('names files after their period', () => {
    expect(fileStem(reports, 'month', 202405)).toBe('created-2024-05');
    expect(fileStem(reports, 'day', 20240517)).toBe('created-2024-05-17');
    expect(fileStem(reports, 'week', 20240513)).toBe('created-week-2024-05-13');
    expect(fileStem(reports, 'year', 812)).toBe('created-0812');
    expect(fileStem(reports, 'all', 0)).toBe('created-all');
  });

  it('gives ranges that roll over months and years and keep years before 100', () => {
    expect(keyRange('month', 202412)).toEqual(['2024-12-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z']);
    expect(keyRange('day', 20240228)).toEqual(['2024-02-28T00:00:00.000Z', '2024-02-29T00:00:00.000Z']);
    expect(keyRange('week', 20241230)).toEqual(['2024-12-30T00:00:00.000Z', '2025-01-06T00:00:00.000Z']);
    expect(keyRange('year', 45)).toEqual(['0045-01-01T00:00:00.000Z', '0046-01-01T00:00:00.000Z']);
  });

  it('lists the keys between two times, or says there are too many', () => {
    const at = (iso: string) => Date.parse(iso);
    expect(keysBetween('month', at('2024-11-30T23:59:59Z'), at('2025-02-01T00:00:00Z'), 10)).toEqual([
      202411, 202412, 202501, 202502,
    ]);
    expect(keysBetween('day', at('2024-12-31T10:00:00Z'), at('2025-01-01T00:00:00Z'), 10)).toEqual([
      20241231, 20250101,
    ]);
    // Weeks start on Monday: Tuesday 2024-12-31 is in the week of Monday 2024-12-30.
    expect(keysBetween('week', at('2024-12-31T10:00:00Z'), at('2025-01-13T00:00:00Z'), 10)).toEqual([
      20241230, 20250106, 20250113,
    ]);
    expect(keysBetween('year', at('2000-06-01T00:00:00Z'), at('2100-01-01T00:00:00Z'), 50)).toBe('all');
  });

  it("puts any instant in the file whose range holds it, as DuckDB computes the row's key", async () => {
    const instance = await duckdbApi.DuckDBInstance.create(':memory:');
    const c = await instance.connect();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.date({
            min: new Date('0001-01-01T00:00:00Z'),
            max: new Date('9999-12-31T23:59:59Z'),
            noInvalidDate: true,
          }),
          fc.constantFrom(...PERIODS),
          fc.constantFrom('UTC', 'Pacific/Kiritimati', 'America/St_Johns'),
          async (date, period, zone) => {
            // The session's time zone must not matter: keys and ranges are UTC.
            await c.run(`SET TimeZone = '${zone}'`);
            const at = date.toISOString();
            const row = (
              await c.runAndReadAll(
                `SELECT ${keySql(reports, period)} AS k FROM (SELECT '${at}'::TIMESTAMPTZ AS created_at)`,
              )
            ).getRowObjectsJS()[0]!;
            const key = Number(row.k);
            const [from, to] = keyRange(period, key);
            expect(Date.parse(from) <= date.getTime() && date.getTime() < Date.parse(to)).toBe(true);
            const picked = await c.runAndReadAll(
              `SELECT (${rowsOfKeysSql(reports, period, [key])}) AS mine, (${rowsOfKeysSql(reports, period, [key + 1])}) AS next
               FROM (SELECT '${at}'::TIMESTAMPTZ AS created_at)`,
            );
            expect(picked.getRowObjectsJS()[0]).toEqual({ mine: true, next: false });
          },
        ),
        { numRuns: 300 },
      );
    } finally {
      c.closeSync();
      instance.closeSync();
    }
  });
});
