import fc from 'fast-check';
import { isRestyledName } from '../../src/schema/field-names.js';
import { isWellFormedText } from '../../src/schema/value-rules.js';
import { isModelledKey } from '../../src/schema/wire-format.js';
import type { Degrees, Probe, Stamp } from './roundtrip.js';

/**
 * Legal but unusual values of every field, as an upstream may send them, each with what the warehouse and
 * the reader must hold of it (test/helpers/roundtrip.ts).
 */

const MIN_MS = Date.parse('0001-01-01T00:00:00.000Z');
const MAX_MS = Date.parse('9999-12-31T23:59:59.999Z');
const two = (n: number) => String(n).padStart(2, '0');

/** An instant, biased to the range's ends, leap days and the hours around European and US DST changes. */
const instant = fc.oneof(
  fc.integer({ min: MIN_MS, max: MAX_MS }),
  fc.constantFrom(
    MIN_MS,
    MAX_MS,
    Date.parse('2024-02-29T23:59:59.999Z'),
    Date.parse('2000-02-29T12:00:00Z'),
    Date.parse('2024-03-31T01:00:00Z'),
    Date.parse('2024-10-27T00:59:59.999Z'),
    Date.parse('2024-03-10T07:00:00Z'),
    Date.parse('1970-01-01T00:00:00Z'),
    Date.parse('1969-12-31T23:59:59.999Z'),
  ),
  fc.integer({ min: -86_400_000, max: 86_400_000 }).map((d) => Date.parse('2024-11-03T06:00:00Z') + d),
);

/**
 * A timestamp in any form RFC 3339 and ISO 8601 allow and APIs write: `T`, `t` or a space; `Z`, `z`,
 * `±HH:MM` (`-00:00`, `+05:45`, `+14:00`), `±HHMM`, `±HH`; seconds left out on a whole minute; 0 to 12
 * fraction digits after `.` or ISO 8601's `,` (those past the millisecond dropped). Its local time stays
 * within years 0001–9999.
 */
export const stamp: fc.Arbitrary<Stamp> = fc
  .record({
    ms: instant,
    offset: fc.oneof(
      fc.constantFrom(0, 0, 345, -570, 840, -720, 330, 60, -60),
      fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
    ),
    sep: fc.constantFrom('T', 't', ' '),
    zero: fc.constantFrom('Z', 'z', '+00:00', '-00:00', '+0000', '+00'),
    form: fc.constantFrom('HH:MM', 'HHMM', 'HH'),
    digits: fc.integer({ min: 0, max: 12 }),
    point: fc.constantFrom('.', '.', ','),
    noise: fc.stringMatching(/^[0-9]{9}$/),
  })
  .filter(({ ms, offset }) => ms + offset * 60_000 >= MIN_MS && ms + offset * 60_000 <= MAX_MS)
  .map(({ ms, offset, sep, zero, form, digits, point, noise }) => {
    const local = new Date(ms + offset * 60_000).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
    const millis = local.slice(20, 23);
    const fraction = `${millis}${noise}`.slice(0, digits);
    // Fraction digits below the millisecond are dropped, not rounded.
    const kept = Number(millis.slice(0, Math.min(3, digits)).padEnd(3, '0'));
    const truncated = ms - Number(millis) + kept;
    const wholeMinute = local.slice(17, 19) === '00' && digits === 0;
    const time = wholeMinute && noise < '5' ? local.slice(11, 16) : local.slice(11, 19);
    const abs = Math.abs(offset);
    const hh = `${offset < 0 ? '-' : '+'}${two(Math.floor(abs / 60))}`;
    const mm = two(abs % 60);
    const zone =
      offset === 0
        ? zero
        : form === 'HH' && abs % 60 === 0
          ? hh
          : form === 'HHMM'
            ? `${hh}${mm}`
            : `${hh}:${mm}`;
    const text = `${local.slice(0, 10)}${sep}${time}${digits > 0 ? `${point}${fraction}` : ''}${zone}`;
    return { text, iso: new Date(truncated).toISOString() };
  });

/** A coordinate within `max` degrees, as JSON (a number in some spelling, or numeric text) and as a CSV cell. */
function degrees(max: number): fc.Arbitrary<Degrees> {
  const value = fc.oneof(
    fc.double({ min: -max, max, noNaN: true }),
    fc.constantFrom(max, -max, 0, -0, 1e-7, 5e-324, max - Number.EPSILON * max),
  );
  const spellings = fc.constantFrom('plain', 'exp', 'EXP', 'long', 'text', 'oracle');
  return fc.tuple(value, spellings).map(([v, spelling]) => {
    const text =
      spelling === 'oracle' // as text only: `-.5`, `+12.` are no JSON numbers
        ? String(v)
            .replace(/^(-?)0\./, '$1.')
            .replace(/^(\d+)$/, '+$1.')
        : spelling === 'exp'
          ? v.toExponential()
          : spelling === 'EXP'
            ? v.toExponential(20).toUpperCase()
            : spelling === 'long'
              ? v.toFixed(20)
              : Object.is(v, -0)
                ? '-0'
                : String(v);
    // toFixed(20) may name a number a hair away from v: the value is what the text names (-0 is 0 in JSON).
    const named = Number(text) + 0;
    const asText = spelling === 'text' || spelling === 'oracle';
    return { json: asText ? JSON.stringify(text) : text, cell: text, value: named };
  });
}

/** Text of every plane, combining marks, bidi controls, separators, NUL and CSV-hostile characters. */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => isWellFormedText(s)),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc
    .array(
      fc.constantFrom(
        '\u0000',
        '\u2028',
        '\u2029',
        '\u202e',
        '\u200f',
        '\u0301',
        '\ufeff',
        '\u0085',
        '\r\n',
        '\r',
        '\n',
        '"',
        ',',
        '=',
        '+',
        '-',
        '@',
        '\t',
        ' ',
        '\\N',
        'NULL',
        '😀',
        '\u{10ffff}',
        '\u{e0001}',
        'مرحبا',
        'a',
      ),
      { maxLength: 8 },
    )
    .map((parts) => parts.join('')),
);

/** An id a report may have: as JSON (string or number) and as a CSV cell, with the id stored. */
const idParts: fc.Arbitrary<Pick<Probe, 'idJson' | 'idCell' | 'id'>> = fc.oneof(
  hostileText
    // `17.0` is the id 17 in a CSV cell (a pandas float column): not an id text can round-trip.
    .filter((s) => /\S/.test(s) && s.length <= 200 && !/^-?\d+\.0+$/.test(s))
    .map((s) => ({ idJson: JSON.stringify(s), idCell: s, id: s })),
  fc
    .constantFrom(
      '007',
      'a b',
      '%2F',
      'a/b?c#d',
      '"quoted"',
      "'",
      '=SUM(A1)',
      '-1',
      '+1',
      '@x',
      ' lead',
      'trail ',
      'x'.repeat(256),
    )
    .map((s) => ({ idJson: JSON.stringify(s), idCell: s, id: s })),
  // JSON integers, negative and past 2^53 too, and with a zero fraction (a float column): their digits.
  fc
    .tuple(fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }), fc.constantFrom('', '.0', '.000'))
    .map(([n, zero]) => ({ idJson: `${n}${zero}`, idCell: `${n}${zero}`, id: String(n) })),
);

/** An unknown field's key: empty, unicode, anything but a modelled field in any style. */
const extraKey = fc
  .oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('', 'ключ', 'a.b', 'with space', '😀'))
  .filter((k) => isWellFormedText(k) && !isModelledKey(k) && !isRestyledName(k) && !/[\r\n]/.test(k));

/** An unknown field's value as its canonical JSON text (numbers as sent). */
const extraJson: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.constantFrom(
    '12345678901234567890',
    '1e400',
    '-1.5E-10',
    '1.0',
    '-0',
    '1E+2',
    '5e-324',
    '0.1',
    '1e-400',
  ),
  fc.constantFrom('""', '"5"', '"true"', '" padded "', 'true', 'false', '[]', '{}', '{"":null}', '[[[]]]'),
  hostileText.map((s) => JSON.stringify(s)),
);

/** One valid report (its id from `idParts`, made unique by the caller). */
export const probe: fc.Arbitrary<Probe> = fc
  .record({
    idParts,
    status: fc.constantFrom('SUBMITTED', 'IN PROGRESS', 'résolu', 'x'.repeat(128)),
    destination: fc.constantFrom('ROAD_CONTROL', 'Straßenlaterne defekt', '道路'),
    category: fc.option(hostileText, { nil: null }),
    description: fc.option(hostileText, { nil: null }),
    address: fc.option(hostileText, { nil: null }),
    location: fc.option(fc.record({ lat: degrees(90), lng: degrees(180) }), { nil: null }),
    createdAt: stamp,
    updatedAt: fc.option(stamp, { nil: null }),
    extras: fc.uniqueArray(fc.tuple(extraKey, extraJson), { maxLength: 4, selector: ([k]) => k }),
    locationExtras: fc.uniqueArray(
      fc.tuple(
        extraKey.filter((k) => k !== 'type' && k !== 'coordinates'),
        extraJson,
      ),
      { maxLength: 2, selector: ([k]) => k },
    ),
  })
  .map(({ idParts, ...rest }) => ({ ...idParts, ...rest }));

/** 1 to `max` valid reports with distinct ids. */
export function probes(max: number): fc.Arbitrary<Probe[]> {
  return fc.uniqueArray(probe, { minLength: 1, maxLength: max, selector: (p) => p.id });
}
