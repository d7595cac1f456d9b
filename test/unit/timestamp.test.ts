import { describe, expect, it } from 'vitest';
import { normalizeTimestamp, normalizeTimestampGeneral } from '../../src/schema/timestamp.js';

describe('normalizeTimestamp', () => {
  it('returns normalised UTC text unchanged and agrees with the general path on it', () => {
    const t = '2024-05-27T03:10:05.000Z';
    expect(normalizeTimestamp(t)).toBe(t);
    expect(normalizeTimestampGeneral(t)).toBe(t);
  });

  it('agrees with the general path on every field boundary of the normalised form', () => {
    const cases: string[] = [];
    for (const year of ['0000', '0004', '1900', '1999', '2000', '2023', '2024', '9999'])
      for (const month of ['00', '01', '02', '04', '12', '13'])
        for (const day of ['00', '01', '28', '29', '30', '31', '32'])
          for (const time of ['00:00:00.000', '23:59:59.999', '24:00:00.000', '12:60:00.000', '12:00:60.000'])
            cases.push(`${year}-${month}-${day}T${time}Z`);
    cases.push('2024-01-01T00:00:00.000z', '2024-01-0aT00:00:00.000Z', '2024-01-01X00:00:00.000Z');
    let accepted = 0;
    for (const c of cases) {
      expect(normalizeTimestamp(c), c).toBe(normalizeTimestampGeneral(c));
      if (normalizeTimestamp(c) !== null) accepted++;
    }
    expect(accepted).toBeGreaterThan(100);
    expect(accepted).toBeLessThan(cases.length);
  });

  it('normalises offsets and refuses local times and impossible dates', () => {
    expect(normalizeTimestamp('2016-02-16T21:26:00+01:00')).toBe('2016-02-16T20:26:00.000Z');
    expect(normalizeTimestamp('2016-02-16T21:26:00')).toBeNull();
    expect(normalizeTimestamp('2023-02-29T00:00:00.000Z')).toBeNull();
    expect(normalizeTimestamp('2024-02-29T00:00:00.000Z')).toBe('2024-02-29T00:00:00.000Z');
  });
});
