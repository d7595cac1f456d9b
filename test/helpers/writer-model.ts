import fc from 'fast-check';

/**
 * A small model of an upstream that is not this project: reports held as typed values (as a Python or
 * JavaScript service holds them) and written out by writers with their own conventions — `json.dumps` with
 * or without spaces and sorted keys, Python's `csv` module (`True`, floats by `repr`, `None` and `""` both
 * an empty cell, `QUOTE_ALL`, `\r\n` or `\n`), a JavaScript writer (`String(n)`: `1.0` is `1`), and so on.
 */

/** A typed value of the model (an int and a float are told apart, as in Python). */
export type Value =
  null | boolean | string | { int: bigint } | { float: number } | Value[] | { obj: Array<[string, Value]> };

/** One report of the model: the known fields, then its unknown fields in order. */
export interface ModelReport {
  id: string;
  status: string;
  category: string | null;
  description: string | null;
  location: { lat: number; lng: number } | null;
  createdAt: string;
  /** `null`: never updated (JSON `null`; an empty cell in CSV, `""` under `QUOTE_ALL`). */
  updatedAt: string | null;
  extras: Array<[string, Value]>;
}

/** How one upstream writes JSON (its NDJSON export and list pages, and JSON inside CSV cells). */
export interface JsonStyle {
  /** `json.dumps` default (`", "`, `": "`) or compact. */
  spaced: boolean;
  sortKeys: boolean;
  /** Non-ASCII as `\uXXXX` (`ensure_ascii`, Python's default). */
  asciiOnly: boolean;
  /** Floats as Python's `repr` (`1.0`, `1e-05`, `1e+16`) or as JavaScript's `String` (`1`, `0.00001`). */
  floats: 'python' | 'js';
}

/** How one upstream writes its CSV export. */
export interface CsvStyle {
  /** `minimal`: Python's default (`None` and `""` both an empty cell); `all`: every cell quoted (both `""`); `notnull`: PostgreSQL's (`""` quoted, NULL not). */
  quoting: 'minimal' | 'all' | 'notnull';
  lineEnd: '\r\n' | '\n';
  booleans: 'True' | 'true' | 'TRUE';
  floats: 'python' | 'js';
  /** JSON written into a cell for an object or array. */
  json: JsonStyle;
  /** `createdAt` as `str(datetime)` (a space between date and time) instead of its ISO text. */
  spaceInTimestamps: boolean;
  /** Extra columns in order of first appearance, or sorted. */
  sortColumns: boolean;
}

export const jsonStyle: fc.Arbitrary<JsonStyle> = fc.record({
  spaced: fc.boolean(),
  sortKeys: fc.boolean(),
  asciiOnly: fc.boolean(),
  floats: fc.constantFrom('python' as const, 'js' as const),
});

export const csvStyle: fc.Arbitrary<CsvStyle> = fc.record({
  quoting: fc.constantFrom('minimal' as const, 'all' as const, 'notnull' as const),
  lineEnd: fc.constantFrom('\r\n' as const, '\n' as const),
  booleans: fc.constantFrom('True' as const, 'true' as const, 'TRUE' as const),
  floats: fc.constantFrom('python' as const, 'js' as const),
  json: jsonStyle,
  spaceInTimestamps: fc.boolean(),
  sortColumns: fc.boolean(),
});

const text = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('007', ' 5', '1.0', '12', 'True', 'no', 'a,b', 'say "hi"', 'two\nlines', 'crlf\r\nhere'),
  fc.constantFrom('{"a": 1}', '[1, 2]', 'Straße ✓', '-', 'null', 'NaN'),
);
const float = fc
  .oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(1, 0.1, 1e-5, 1e16, 2.5, -0, 1e21, 123456.789),
  )
  .map((float) => ({ float }));
const int = fc
  .oneof(fc.bigInt({ min: -1000n, max: 1000n }), fc.constant(12345678901234567890n))
  .map((n) => ({ int: n }));
const leaf: fc.Arbitrary<Value> = fc.oneof(fc.constant(null), fc.boolean(), text, int, float);
const key = fc.constantFrom('a', 'b', 'ward', 'zip', 'photos', 'score', '__proto__', 'Straße');

/** A typed value: scalars, and objects and arrays of them (two levels). */
export const value: fc.Arbitrary<Value> = fc.oneof(
  { weight: 4, arbitrary: leaf },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.array(leaf, { maxLength: 3 }),
      fc
        .uniqueArray(fc.tuple(key, fc.oneof(leaf, fc.array(leaf, { maxLength: 2 }))), {
          maxLength: 3,
          selector: ([k]) => k,
        })
        .map((obj) => ({ obj })),
    ),
  },
);

const extraKey = fc.constantFrom(
  'ward',
  'photos',
  'flag',
  'meta',
  'zip',
  'note',
  'score',
  'constructor',
  '__proto__',
);

/** A model report; `i` makes its id. */
export function modelReport(i: number): fc.Arbitrary<ModelReport> {
  return fc.record({
    id: fc.constant(`r${i}`),
    status: fc.constantFrom('SUBMITTED', 'IN_PROGRESS'),
    category: fc.oneof(fc.constant(null), fc.constant(''), text),
    description: fc.oneof(fc.constant(null), fc.constant(''), text),
    location: fc.option(
      fc.record({ lat: fc.constantFrom(52.5, 0, 40.7128), lng: fc.constantFrom(13.4, -73.935242) }),
      {
        nil: null,
      },
    ),
    createdAt: fc.constantFrom('2024-03-01T10:00:00+00:00', '2023-12-24T18:30:05.250000+01:00'),
    // PostgreSQL's text for a timestamptz: an hour-only offset.
    updatedAt: fc.constantFrom(null, '2024-03-02T09:15:00+00:00', '2024-03-02 09:15:00.5+00'),
    extras: fc.uniqueArray(fc.tuple(extraKey, value), { maxLength: 4, selector: ([k]) => k }),
  });
}

/** Python's `repr` of a float (shortest round trip; `.0` on integral values, exponent outside 1e-4 … 1e16). */
export function pythonFloat(n: number): string {
  if (Object.is(n, -0)) return '-0.0';
  if (n === 0) return '0.0';
  const [mantissa, exp] = n.toExponential().split('e') as [string, string];
  const e = Number(exp);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  if (e < -4 || e >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (e < 0) return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, '0');
  const fraction = digits.slice(e + 1);
  return `${sign}${whole}.${fraction === '' ? '0' : fraction}`;
}

function floatText(n: number, style: 'python' | 'js'): string {
  return style === 'python' ? pythonFloat(n) : String(n);
}

function jsonString(s: string, style: JsonStyle): string {
  const json = JSON.stringify(s);
  return style.asciiOnly
    ? json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    : json;
}

/** `json.dumps` of a value in `style`. */
export function dumps(v: Value, style: JsonStyle): string {
  const [item, colon] = style.spaced ? [', ', ': '] : [',', ':'];
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string') return jsonString(v, style);
  if (Array.isArray(v)) return `[${v.map((x) => dumps(x, style)).join(item)}]`;
  if ('int' in v) return v.int.toString();
  if ('float' in v) return floatText(v.float, style.floats);
  const entries = style.sortKeys ? [...v.obj].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : v.obj;
  return `{${entries.map(([k, x]) => `${jsonString(k, style)}${colon}${dumps(x, style)}`).join(item)}}`;
}

/** The report as one JSON object (an NDJSON line, a list item) in `style`: known fields first, as the upstream's. */
export function reportJson(r: ModelReport, style: JsonStyle): string {
  const location: Value = r.location
    ? {
        obj: [
          ['lat', { float: r.location.lat }],
          ['lng', { float: r.location.lng }],
        ],
      }
    : null;
  const fields: Array<[string, Value]> = [
    ['id', r.id],
    ['status', r.status],
    ['destination', 'ROAD_CONTROL'],
    ['category', r.category],
    ['description', r.description],
    ['location', location],
    ['createdAt', r.createdAt],
    ['updatedAt', r.updatedAt],
    ...r.extras,
  ];
  return dumps({ obj: fields }, { ...style, sortKeys: false });
}

/** One CSV cell as the writer writes it (quoted as its quoting rule says). */
function csvCell(v: Value, style: CsvStyle): string {
  let cell: string | null;
  if (v === null) cell = null;
  else if (typeof v === 'boolean')
    cell = v
      ? style.booleans
      : style.booleans === 'True'
        ? 'False'
        : style.booleans === 'TRUE'
          ? 'FALSE'
          : 'false';
  else if (typeof v === 'string') cell = v;
  else if (Array.isArray(v) || 'obj' in v) cell = dumps(v, style.json);
  else if ('int' in v) cell = v.int.toString();
  else cell = floatText(v.float, style.floats);
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
  if (style.quoting === 'all') return quote(cell ?? '');
  if (cell === null) return '';
  if (cell === '') return style.quoting === 'notnull' ? '""' : '';
  return /[",\r\n]/.test(cell) || style.quoting === 'notnull' ? quote(cell) : cell;
}

/** The whole CSV export of `reports` (one page) as the writer of `style` writes it. */
export function csvExport(reports: readonly ModelReport[], style: CsvStyle): string {
  const seen: string[] = [];
  for (const r of reports) for (const [k] of r.extras) if (!seen.includes(k)) seen.push(k);
  const extra = style.sortColumns ? [...seen].sort() : seen;
  const header = [
    'id',
    'status',
    'destination',
    'category',
    'description',
    'lat',
    'lng',
    'createdAt',
    'updatedAt',
    ...extra,
  ];
  const rows = reports.map((r) => {
    const extras = new Map(r.extras);
    const created = style.spaceInTimestamps ? r.createdAt.replace('T', ' ') : r.createdAt;
    const cells: Value[] = [
      r.id,
      r.status,
      'ROAD_CONTROL',
      r.category,
      r.description,
      r.location ? { float: r.location.lat } : null,
      r.location ? { float: r.location.lng } : null,
      created,
      r.updatedAt,
      ...extra.map((k) => (extras.has(k) ? extras.get(k)! : null)),
    ];
    return cells.map((c) => csvCell(c, style)).join(',');
  });
  return [header.map((h) => csvCell(h, style)).join(','), ...rows]
    .map((line) => `${line}${style.lineEnd}`)
    .join('');
}
