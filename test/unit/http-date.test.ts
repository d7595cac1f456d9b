import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { notModified } from '../../src/reader/validators.js';
import { pageValidator } from '../../src/sync/sources/export-validators.js';
import { parseRetryAfter } from '../../src/upstream/retry-after.js';
import { parseHttpDate } from '../../src/util/http-date.js';

// HTTP-dates are GMT in each of their three formats (RFC 9110 §5.6.7), whatever the process's time zone.

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');
const parts = (ms: number) => {
  const d = new Date(ms);
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return { d, day: DAYS[d.getUTCDay()]!, month: MONTHS[d.getUTCMonth()]!, time };
};
const FORMATS = {
  'IMF-fixdate': (ms: number) => {
    const { d, day, month, time } = parts(ms);
    return `${day.slice(0, 3)}, ${two(d.getUTCDate())} ${month} ${d.getUTCFullYear()} ${time} GMT`;
  },
  'RFC 850': (ms: number) => {
    const { d, day, month, time } = parts(ms);
    return `${day}, ${two(d.getUTCDate())}-${month}-${two(d.getUTCFullYear() % 100)} ${time} GMT`;
  },
  asctime: (ms: number) => {
    const { d, day, month, time } = parts(ms);
    return `${day.slice(0, 3)} ${month} ${String(d.getUTCDate()).padStart(2, ' ')} ${time} ${d.getUTCFullYear()}`;
  },
};

// Zones far from GMT either way, and with odd offsets; changing process.env.TZ takes effect at once in Node.
const ZONES = [
  'UTC',
  'America/New_York',
  'Pacific/Kiritimati',
  'Pacific/Pago_Pago',
  'Asia/Kolkata',
  'Pacific/Chatham',
];
const zone = fc.constantFrom(...ZONES);
const savedTz = process.env.TZ;
afterEach(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});

const NOW = Date.UTC(2026, 10, 28, 12, 0, 0);
const seconds = (from: number, to: number) =>
  fc.integer({ min: from / 1000, max: to / 1000 }).map((s) => s * 1000);
// Four-digit years; an RFC 850 year is read within 50 years after now (RFC 9110 §5.6.7).
const anyInstant = seconds(Date.UTC(1000, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59));
const rfc850Instant = seconds(Date.UTC(1977, 0, 1), Date.UTC(2076, 11, 31, 23, 59, 59));

describe('parseHttpDate', () => {
  it('the zones really differ (the property below would prove nothing otherwise)', () => {
    process.env.TZ = 'America/New_York';
    expect(new Date(NOW).getTimezoneOffset()).toBe(300);
  });

  it.each(Object.keys(FORMATS) as (keyof typeof FORMATS)[])(
    'any instant formatted as %s reads back to it, in any process time zone',
    (name) => {
      const format = FORMATS[name];
      fc.assert(
        fc.property(name === 'RFC 850' ? rfc850Instant : anyInstant, zone, (at, tz) => {
          process.env.TZ = tz;
          expect(parseHttpDate(format(at), NOW)).toBe(at);
        }),
      );
    },
  );

  it('reads the examples of RFC 9110 §5.6.7 as one instant', () => {
    process.env.TZ = 'America/New_York';
    const at = Date.UTC(1994, 10, 6, 8, 49, 37);
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(at);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW)).toBe(at);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994')).toBe(at);
  });

  it.each([
    '2026-11-21T12:00:05Z',
    'Sat, 21 Nov 2026 12:00:05 +0000',
    'Sat, 21 Nov 2026 12:00:05 UTC',
    'Sat Nov 21 12:00:05 2026 GMT',
  ])('reads %j, no HTTP-date but naming its zone, as that instant', (text) => {
    expect(parseHttpDate(text, NOW)).toBe(Date.UTC(2026, 10, 21, 12, 0, 5));
  });

  it('reads a one-digit day as Java writes it', () => {
    expect(parseHttpDate('Tue, 3 Jun 2008 11:05:30 GMT', NOW)).toBe(Date.UTC(2008, 5, 3, 11, 5, 30));
  });

  it.each([
    '',
    'soon',
    'Sat, 21 Nov 2026 12:00:05',
    'Mon, 31 Nov 2026 12:00:05 GMT',
    'Sat, 21 Nov 2026 24:00:00 GMT',
  ])('is undefined for %j (no zone, or no such day or time)', (text) => {
    expect(parseHttpDate(text, NOW)).toBeUndefined();
  });
});

describe('HTTP-dates where they are read', () => {
  it('Retry-After in any format waits as long, in any process time zone', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.values(FORMATS)),
        fc.integer({ min: 1, max: 86_400 }),
        zone,
        (format, s, tz) => {
          process.env.TZ = tz;
          expect(parseRetryAfter(format(NOW + s * 1000), NOW)).toBe(s * 1000);
        },
      ),
    );
  });

  it('Last-Modified a second before Date is a strong validator, and If-Modified-Since matches, in any zone', () => {
    // Date, a second later, must still be within RFC 850's window.
    const modified = rfc850Instant.filter((at) => at < Date.UTC(2076, 11, 31, 23, 59, 59));
    fc.assert(
      fc.property(fc.constantFrom(...Object.values(FORMATS)), modified, zone, (format, at, tz) => {
        process.env.TZ = tz;
        const lastModified = FORMATS['IMF-fixdate'](at);
        const headers = { 'last-modified': lastModified, date: format(at + 1000) };
        expect(pageValidator(headers).lastModified).toBe(lastModified);
        expect(notModified({ 'if-modified-since': format(at) }, { etag: '"x"', lastModified })).toBe(true);
      }),
    );
  });
});
