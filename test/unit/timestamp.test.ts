import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeTimestamp, normalizeTimestampGeneral, timestampIssue } from '../../src/schema/timestamp.js';

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

  it('reads any number of fraction digits (RFC 3339: 1*DIGIT), and a comma (ISO 8601), dropping those past the millisecond', () => {
    expect(normalizeTimestamp('2024-01-01T00:00:00.1234567891Z')).toBe('2024-01-01T00:00:00.123Z');
    expect(normalizeTimestamp(`2024-01-01T00:00:00.${'9'.repeat(40)}+05:45`)).toBe(
      '2023-12-31T18:15:00.999Z',
    );
    expect(normalizeTimestamp('2024-01-01 00:00:00,5-00:00')).toBe('2024-01-01T00:00:00.500Z');
    expect(normalizeTimestamp('9999-12-31T23:59:59.99999999999Z')).toBe('9999-12-31T23:59:59.999Z');
    expect(normalizeTimestamp('2024-01-01T00:00:00.Z')).toBeNull();
    expect(normalizeTimestamp('2024-01-01T00:00.5Z')).toBeNull();
  });

  it("reads every offset form ISO 8601 and PostgreSQL's timestamptz text write as the same instant (property)", () => {
    // PostgreSQL writes `2024-01-01 10:00:00+00` (and `+05:30` only for a zone off the hour).
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('0002-01-01T00:00:00Z'),
          max: new Date('9998-12-31T00:00:00Z'),
          noInvalidDate: true,
        }),
        fc.integer({ min: -12, max: 14 }),
        fc.constantFrom('T', ' '),
        fc.constantFrom('+HH:MM', '+HHMM', '+HH'),
        (date, hours, sep, form) => {
          const local = new Date(date.getTime() + hours * 3_600_000).toISOString().slice(0, 23);
          const hh = `${hours < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}`;
          const offset = form === '+HH:MM' ? `${hh}:00` : form === '+HHMM' ? `${hh}00` : hh;
          const text = `${local.replace('T', sep)}${offset}`;
          expect(normalizeTimestamp(text), text).toBe(date.toISOString());
        },
      ),
    );
  });
});

describe('timestampIssue: why a timestamp is refused, in the quarantine', () => {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const exists = (y: number, m: number, d: number) => {
    const t = new Date(Date.UTC(2000, m - 1, d));
    t.setUTCFullYear(y);
    return t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
  };

  it('names a date that does not exist, a time of day that does not, a leap second and a missing offset', () => {
    expect(timestampIssue('2023-02-29T10:00:00+01:00')).toBe('no such date: 2023-02-29');
    expect(timestampIssue('2024-04-31T10:00:00Z')).toBe('no such date: 2024-04-31');
    expect(timestampIssue('2016-12-31T23:59:60Z')).toMatch(/^a leap second \(23:59:60\)/);
    expect(timestampIssue('2024-01-01T24:00:00Z')).toBe('no such time of day: 24:00:00');
    expect(timestampIssue('2024-01-01T10:00:00')).toMatch(/^no UTC offset/);
    expect(timestampIssue('2024-01-01 10:00')).toMatch(/^no UTC offset/);
    expect(timestampIssue('2024-04-16T03:0')).toBe('not an ISO 8601 timestamp with offset');
    expect(timestampIssue('9999-12-31T23:59:59-01:00')).toMatch(/^outside the storable range/);
  });

  it('says "no such date" exactly when the calendar has no such day (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9998 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 31 }),
        (y, m, d) => {
          const text = `${pad(y, 4)}-${pad(m)}-${pad(d)}T12:00:00Z`;
          if (exists(y, m, d)) expect(normalizeTimestamp(text)).not.toBe(null);
          else expect(timestampIssue(text)).toBe(`no such date: ${pad(y, 4)}-${pad(m)}-${pad(d)}`);
        },
      ),
    );
  });
});
