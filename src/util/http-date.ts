// HTTP-dates (RFC 9110 §5.6.7) as a recipient must read them: three formats, all in GMT. Date.parse is no
// substitute: it reads the asctime format in the process's time zone.

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY = '(?:mon|tue|wed|thu|fri|sat|sun)';
const LONG_DAY = '(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)';
const MONTH = '(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';

// Sun, 06 Nov 1994 08:49:37 GMT
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`, 'i');
// Sunday, 06-Nov-94 08:49:37 GMT
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`, 'i');
// Sun Nov  6 08:49:37 1994
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`, 'i');

/**
 * The instant an HTTP-date names, in ms since the epoch: an IMF-fixdate, an RFC 850 date or an asctime
 * date, each read as GMT whatever the process's time zone. An RFC 850 two-digit year more than 50 years
 * after `now` is the latest year before it with those digits (RFC 9110 §5.6.7). The weekday is not checked
 * against the date.
 *
 * @param now the current time in ms since the epoch (injectable for tests)
 * @returns for any other text that names its zone (`… UTC`, `… +0000`, a one-digit day), what `Date.parse`
 *   reads; undefined for text without a zone, or a day or time out of range; never throws
 */
export function parseHttpDate(text: string, now: number = Date.now()): number | undefined {
  const value = text.trim();
  let m = IMF_FIXDATE.exec(value);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), m.slice(4, 7));
  m = ASCTIME.exec(value);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), m.slice(3, 6));
  m = RFC_850.exec(value);
  if (!m) return lenientDate(value);
  const thisYear = new Date(now).getUTCFullYear();
  let year = Math.floor(thisYear / 100) * 100 + Number(m[3]);
  if (year > thisYear + 50) year -= 100;
  return utc(year, m[2]!, Number(m[1]), m.slice(4, 7));
}

/**
 * A date in another common form that names its zone (`Tue, 3 Jun 2008 11:05:30 GMT` as Java writes days
 * below 10, `… UTC`, `… +0000`, ISO 8601 with `Z` or an offset): read by `Date.parse`, which needs no local
 * time zone for it. Text without a zone is not guessed at.
 */
function lenientDate(value: string): number | undefined {
  if (!/(?:\b(?:GMT|UTC|UT)|Z|[+-]\d{2}:?\d{2})$/i.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

function utc(year: number, monthName: string, day: number, time: string[]): number | undefined {
  const month = MONTHS.indexOf(monthName.toLowerCase());
  const [hour, minute, second] = time.map(Number) as [number, number, number];
  // Second 60 is a leap second (RFC 5322 §3.3): it reads as the next minute's first.
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const midnight = new Date(0);
  midnight.setUTCFullYear(year, month, day); // not Date.UTC: it reads years 0 to 99 as 1900 to 1999
  // A day the month does not have (31 Nov) would roll into the next month.
  if (midnight.getUTCDate() !== day) return undefined;
  return midnight.getTime() + ((hour * 60 + minute) * 60 + second) * 1000;
}
