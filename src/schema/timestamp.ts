// ISO 8601 date-time with a UTC offset or `Z` (RFC 3339 profile). Seconds and fractions are optional.
const ISO_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * Parses an ISO 8601 timestamp that carries an offset and returns it normalised to UTC in
 * `Date#toISOString()` form (`2024-05-27T03:10:05.000Z`, millisecond precision), or `null` when the text
 * is not such a timestamp or names an impossible date (Feb 30, hour 25). Timestamps without an offset are
 * refused: their instant is ambiguous (DESIGN.md §2: "ISO 8601 with offset").
 */
export function normalizeTimestamp(text: string): string | null {
  const m = ISO_WITH_OFFSET.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(Number(y), month)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) return null;
  const ms = Date.parse(text.replace(' ', 'T'));
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}
