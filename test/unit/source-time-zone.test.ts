import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { normalizeTimestamp, timestampIssue } from '../../src/schema/timestamp.js';
import { setUpstreamReading } from '../../src/schema/upstream-reading.js';

// A timestamp written without an offset is read in REPORTS_SOURCE_TIME_ZONE: the instant whose wall time
// in that zone it is (the first of two, in the hour a change to winter time repeats).

afterEach(() => setUpstreamReading(undefined));

const ZONES = [
  'America/New_York',
  'Europe/Berlin',
  'Asia/Kolkata',
  'Australia/Lord_Howe',
  'Pacific/Chatham',
  'UTC',
];

/** The wall time of `ms` in `zone`, as `YYYY-MM-DDTHH:MM:SS.mmm` (no offset). */
function wallTime(zone: string, ms: number): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(ms)
      .map((p) => [p.type, p.value]),
  );
  const milli = String(((ms % 1000) + 1000) % 1000).padStart(3, '0');
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.${milli}`;
}

describe('REPORTS_SOURCE_TIME_ZONE', () => {
  it('reads a wall time as the earliest instant that has it in the zone', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ZONES),
        fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2037, 11, 31) }),
        (zone, ms) => {
          setUpstreamReading({ fieldNames: {}, timeZone: zone });
          const wall = wallTime(zone, ms);
          const read = normalizeTimestamp(wall);
          expect(read, wall).not.toBeNull();
          const instant = Date.parse(read!);
          expect(wallTime(zone, instant)).toBe(wall);
          expect(instant).toBeLessThanOrEqual(ms);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('leaves a timestamp with an offset as it names it, and refuses one without when no zone is set', () => {
    setUpstreamReading({ fieldNames: {}, timeZone: 'Asia/Kolkata' });
    expect(normalizeTimestamp('2024-04-16T03:03:15-04:00')).toBe('2024-04-16T07:03:15.000Z');
    expect(normalizeTimestamp('2024-04-16T03:03:15')).toBe('2024-04-15T21:33:15.000Z');
    expect(normalizeTimestamp('2024-02-30T03:03:15')).toBeNull();
    setUpstreamReading(undefined);
    expect(normalizeTimestamp('2024-04-16T03:03:15')).toBeNull();
  });

  it('reads a wall time a change to summer time skips with the offset before it', () => {
    setUpstreamReading({ fieldNames: {}, timeZone: 'America/New_York' });
    expect(normalizeTimestamp('2024-03-10T02:30:00')).toBe('2024-03-10T07:30:00.000Z'); // 03:30 EDT
    expect(normalizeTimestamp('2024-11-03T01:30:00')).toBe('2024-11-03T05:30:00.000Z'); // 01:30 EDT, not EST
  });

  it('refuses text that is no timestamp at all, with a zone set, as it does without one', () => {
    // SF311's broken record: every field the string "null", its requested_datetime ":27.7".
    setUpstreamReading({ fieldNames: {}, timeZone: 'America/Los_Angeles' });
    for (const text of [':27.7', 'null', 'true', '', 'Z', '12/25/2013', '2010-11-15']) {
      expect(normalizeTimestamp(text), text).toBeNull();
      expect(timestampIssue(text), text).toBe('not an ISO 8601 timestamp with offset');
    }
    expect(normalizeTimestamp('2010-11-15 01:05:25.727')).toBe('2010-11-15T09:05:25.727Z');
  });

  it("reads a Socrata portal's US 12-hour local time (NYC 311's CSV download) in the zone", () => {
    setUpstreamReading({ fieldNames: {}, timeZone: 'America/New_York' });
    expect(normalizeTimestamp('12/25/2013 11:59:08 PM')).toBe('2013-12-26T04:59:08.000Z');
    expect(normalizeTimestamp('05/01/2022 12:00:03 AM')).toBe('2022-05-01T04:00:03.000Z');
    expect(normalizeTimestamp('05/01/2022 12:30:00 PM')).toBe('2022-05-01T16:30:00.000Z');
    expect(normalizeTimestamp('5/1/2022 1:05 am')).toBe('2022-05-01T05:05:00.000Z');
    // The ISO text of the same wall time reads as the same instant.
    expect(normalizeTimestamp('05/01/2022 01:00:31 AM')).toBe(normalizeTimestamp('2022-05-01T01:00:31.000'));
    for (const impossible of ['02/30/2024 10:00:00 AM', '13/01/2024 10:00:00 AM', '01/01/2024 13:00:00 PM']) {
      expect(normalizeTimestamp(impossible), impossible).toBeNull();
      expect(timestampIssue(impossible), impossible).toMatch(/^no such date or time of day/);
    }
    // Without its AM/PM marker the order of day and month is not known: refused.
    expect(normalizeTimestamp('05/01/2022 10:00:00')).toBeNull();
    setUpstreamReading(undefined);
    expect(normalizeTimestamp('12/25/2013 11:59:08 PM')).toBeNull();
    expect(timestampIssue('12/25/2013 11:59:08 PM')).toMatch(/REPORTS_SOURCE_TIME_ZONE/);
  });
});
