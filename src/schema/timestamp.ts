import { upstreamReading } from './upstream-reading.js';

// ISO 8601 date-time with a UTC offset or `Z` (RFC 3339's profile, plus what ISO 8601 and PostgreSQL's text
// for `timestamptz` also write: a space for `T`, `±HHMM`, an hour-only `±HH`, a decimal comma). Seconds and
// fractions are optional; a fraction may have any number of digits (RFC 3339: `1*DIGIT`).
const ISO_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?(Z|[+-]\d{2}(?::?\d{2})?)$/i;

/**
 * `text` (matched by {@link ISO_WITH_OFFSET}) as `Date.parse` reads it: `T`, a `.` and at most three
 * fraction digits (the rest dropped, not rounded), and an hour-only offset as `±HH:00`.
 */
function parseable(text: string): number {
  const t = text.replace(' ', 'T').replace(/[.,](\d{1,3})\d*/, '.$1');
  return Date.parse(/[+-]\d{2}$/.test(t) ? `${t}:00` : t);
}

/**
 * The instants a report's timestamp may name, in UTC: years 0001 to 9999. DuckDB's TIMESTAMPTZ reaches
 * further (294247 AD), but `toISOString()` writes a year past 9999 as `+010000-…`, which DuckDB's cast
 * refuses (a Conversion Error that failed every run, measured), and DuckDB has no year 0 (its text for
 * `0000-…` is `0001 (BC)`): inside this range the stored instant reads back as the same text.
 */
export const TIMESTAMP_RANGE = { min: '0001-01-01T00:00:00.000Z', max: '9999-12-31T23:59:59.999Z' } as const;

/**
 * Parses an ISO 8601 timestamp that carries an offset and returns it normalised to UTC in
 * `Date#toISOString()` form (`2024-05-27T03:10:05.000Z`, millisecond precision), or `null` when the text
 * is not such a timestamp, names an impossible date (Feb 30, hour 25), or an instant outside
 * {@link TIMESTAMP_RANGE} once in UTC (`9999-12-31T23:59:59-01:00` is year 10000). Timestamps without an
 * offset are refused: their instant is ambiguous (docs/sources.md: ISO 8601 with offset).
 *
 * Text already in that normalised form (what exports mostly carry) is checked field by field without a
 * regex or a `Date` (the general path costs ~1 µs); the result is the same as the general path's
 * ({@link normalizeTimestampGeneral}, compared in test/unit/timestamp.test.ts).
 */
export function normalizeTimestamp(text: string): string | null {
  if (isCanonicalUtc(text)) return text;
  return normalizeTimestampGeneral(text);
}

/** The general path of {@link normalizeTimestamp}: any accepted form, through `Date.parse`. */
export function normalizeTimestampGeneral(text: string): string | null {
  const m = ISO_WITH_OFFSET.exec(text);
  if (!m) {
    const us = isoOfUsWallTime(text);
    return us === null ? localTimestamp(text) : us === undefined ? null : localTimestamp(us);
  }
  const [, y, mo, d, h, mi, s] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(Number(y), month)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) return null;
  const ms = parseable(text);
  if (Number.isNaN(ms)) return null;
  const iso = new Date(ms).toISOString();
  return inRange(iso) ? iso : null;
}

/**
 * Why {@link normalizeTimestamp} refuses `text` (for the quarantine's issue): no offset, a date or time of
 * day that does not exist (Feb 29 of a common year, a leap second), out of {@link TIMESTAMP_RANGE}, or not
 * the form at all.
 */
export function timestampIssue(text: string): string {
  const m = ISO_WITH_OFFSET.exec(text);
  if (!m) {
    const us = isoOfUsWallTime(text);
    if (us === undefined) return `no such date or time of day: ${text}`;
    if (us === null && !ISO_WITH_OFFSET.test(`${text}Z`)) return 'not an ISO 8601 timestamp with offset';
    const zone = upstreamReading().timeZone;
    return zone === undefined
      ? 'no UTC offset (`Z` or `±HH:MM`): the instant it names is ambiguous (REPORTS_SOURCE_TIME_ZONE names the zone such times are written in)'
      : `no such date or time of day in ${zone}, or outside the storable range ${TIMESTAMP_RANGE.min} … ${TIMESTAMP_RANGE.max} (UTC)`;
  }
  const [, y, mo, d, h, mi, s] = m;
  const month = Number(mo);
  if (month < 1 || month > 12 || Number(d) < 1 || Number(d) > daysInMonth(Number(y), month)) {
    return `no such date: ${y}-${mo}-${d}`;
  }
  if (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) {
    return Number(s) === 60 && Number(h) <= 23 && Number(mi) <= 59
      ? `a leap second (${h}:${mi}:60): not an instant the warehouse can store`
      : `no such time of day: ${h}:${mi}${s === undefined ? '' : `:${s}`}`;
  }
  const ms = parseable(text);
  if (!Number.isNaN(ms) && !inRange(new Date(ms).toISOString())) {
    return `outside the storable range ${TIMESTAMP_RANGE.min} … ${TIMESTAMP_RANGE.max} (UTC)`;
  }
  return 'not an ISO 8601 timestamp with offset';
}

// `toISOString()` text is 24 characters for years 0000–9999 only (else `+YYYYYY`/`-YYYYYY`).
function inRange(iso: string): boolean {
  return iso.length === 24 && !iso.startsWith('0000');
}

/** True for `YYYY-MM-DDTHH:MM:SS.mmmZ` naming a real instant: `toISOString()` of it gives the text back. */
function isCanonicalUtc(t: string): boolean {
  if (t.length !== 24 || t.charCodeAt(23) !== 0x5a /* Z */) return false;
  if (t[4] !== '-' || t[7] !== '-' || t[10] !== 'T' || t[13] !== ':' || t[16] !== ':' || t[19] !== '.')
    return false;
  const year = digits(t, 0, 4);
  const month = digits(t, 5, 2);
  const day = digits(t, 8, 2);
  const hour = digits(t, 11, 2);
  const minute = digits(t, 14, 2);
  const second = digits(t, 17, 2);
  const milli = digits(t, 20, 3);
  if (year < 1 || month < 1 || month > 12 || day < 1 || milli < 0) return false;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
  return day <= daysInMonth(year, month);
}

/** The decimal value of `count` ASCII digits at `from`, or -1 when one is not a digit. */
function digits(t: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const d = t.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  if (month === 2 && (year % 4 === 0 ? year % 100 !== 0 || year % 400 === 0 : false)) return 29;
  return DAYS[month - 1] ?? 0;
}

// `12/25/2013 11:59:08 PM`: the US 12-hour form Socrata portals (NYC 311's CSV download) write local times
// in, month first. Only with its AM/PM marker: `05/01/2022 10:00` alone could be day first.
const US_WALL_TIME =
  /^(\d{1,2})\/(\d{1,2})\/(\d{4})[ T](\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*([AP])\.?M\.?$/i;

/**
 * `text` in {@link US_WALL_TIME} form as the offset-less ISO text it names (`2013-12-25T23:59:08`), for
 * {@link localTimestamp}; `null` when it is not that form, `undefined` when it is but names no such
 * date or hour (`02/30/2024`, `13:00 PM`).
 */
function isoOfUsWallTime(text: string): string | null | undefined {
  const m = US_WALL_TIME.exec(text.trim());
  if (!m) return null;
  const [, mo, d, y, h, mi, s, frac, half] = m;
  const month = Number(mo);
  const day = Number(d);
  const hour12 = Number(h);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(Number(y), month)) return undefined;
  if (hour12 < 1 || hour12 > 12 || Number(mi) > 59 || Number(s ?? 0) > 59) return undefined;
  const hour = (hour12 % 12) + (half!.toUpperCase() === 'P' ? 12 : 0);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${y}-${two(month)}-${two(day)}T${two(hour)}:${mi}:${s ?? '00'}${frac ?? ''}`;
}

/**
 * A timestamp without an offset read in `REPORTS_SOURCE_TIME_ZONE` (an IANA zone, schema/upstream-reading.ts),
 * as `normalizeTimestamp` gives it; `null` with no zone set, or for text that is not such a timestamp. A wall
 * time a daylight-saving change repeats is its first instant; one it skips is read with the offset before
 * the change (02:30 on a spring-forward night at 02:00 is 03:30 summer time).
 */
function localTimestamp(text: string): string | null {
  const zone = upstreamReading().timeZone;
  // Only text that is an offset-less timestamp is read as one: anything else (`:27.7`, `null`) is refused
  // here, never handed back to the general path with a `Z` added once more.
  if (zone === undefined || ISO_WITH_OFFSET.test(text) || !ISO_WITH_OFFSET.test(`${text}Z`)) return null;
  const utc = normalizeTimestampGeneral(`${text}Z`);
  if (utc === null) return null;
  const wall = Date.parse(utc);
  const iso = new Date(instantOfWallTime(zone, wall)).toISOString();
  return inRange(iso) ? iso : null;
}

/**
 * The instant (ms) whose wall time in `zone` is `wall` (that wall time's fields read as UTC, ms): of the
 * offsets the zone has a day around it, those giving that wall time back, the earliest instant; none (a
 * wall time a change skips): read with the offset before the change.
 */
function instantOfWallTime(zone: string, wall: number): number {
  const before = zoneOffsetMs(zone, wall - DAY_MS);
  const offsets = new Set([before, zoneOffsetMs(zone, wall), zoneOffsetMs(zone, wall + DAY_MS)]);
  const instants = [...offsets].map((o) => wall - o).filter((t) => zoneOffsetMs(zone, t) === wall - t);
  return instants.length > 0 ? Math.min(...instants) : wall - before;
}

const DAY_MS = 86_400_000;

const ZONE_FORMATS = new Map<string, Intl.DateTimeFormat>();

// Offsets by zone and quarter hour: a zone changes its offset at most once in one (checked at both ends),
// and formatting an instant in a zone costs ~3 µs, a zone-less timestamp up to six of them.
const QUARTER_MS = 900_000;
const OFFSETS = new Map<string, number>();

/** The offset of `zone` from UTC at the instant `ms` (ms; positive east of Greenwich), to the second. */
function zoneOffsetMs(zone: string, ms: number): number {
  const quarter = Math.floor(ms / QUARTER_MS);
  const key = `${zone}\u0000${quarter}`;
  const cached = OFFSETS.get(key);
  if (cached !== undefined) return cached;
  const offset = offsetAt(zone, ms);
  const start = quarter * QUARTER_MS;
  // One offset over the whole quarter hour: cached for it (else this instant's is not kept).
  if (offsetAt(zone, start) === offset && offsetAt(zone, start + QUARTER_MS - 1000) === offset) {
    if (OFFSETS.size >= 100_000) OFFSETS.clear();
    OFFSETS.set(key, offset);
  }
  return offset;
}

function offsetAt(zone: string, ms: number): number {
  let format = ZONE_FORMATS.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    ZONE_FORMATS.set(zone, format);
  }
  const part: Record<string, number> = {};
  let bc = false;
  for (const p of format.formatToParts(ms)) {
    if (p.type === 'era') bc = p.value.startsWith('B');
    else if (p.type !== 'literal') part[p.type] = Number(p.value);
  }
  const local = new Date(0);
  local.setUTCFullYear(bc ? 1 - part.year! : part.year!, part.month! - 1, part.day!);
  local.setUTCHours(part.hour!, part.minute!, part.second!, 0);
  return local.getTime() - (ms - (((ms % 1000) + 1000) % 1000));
}
