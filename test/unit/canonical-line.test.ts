import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { BlockPacker } from '../../src/extract/block-packer.js';
import { canonicalLine } from '../../src/normalize/canonical-line.js';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { decodeBlock } from '../../src/normalize/ndjson-block.js';
import { validateWireReport } from '../../src/schema/report.js';
import { isRestyledName } from '../../src/schema/field-names.js';
import { canonicalJson, isModelledKey } from '../../src/schema/wire-format.js';
import { REPORT_RULES } from '../../src/schema/report-rules.js';
import { DEFAULT_EXTRA_LIMITS, type ExtraLimits } from '../../src/schema/value-rules.js';

// The fast lane may only decline: for every line it takes, the batch-file line must be byte for byte what
// the general path (parse, validate, canonicalise) stages, and every reject must stay the general path's.

let known: KnownLines;
beforeAll(async () => {
  known = await KnownLines.empty('ndjson');
});

// Mostly valid values (so the fast lane has lines to take), with the edge cases mixed in.
const text = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      'R-1',
      'Straße 😀',
      'a"b\\c/d',
      'tab\there',
      'nul\u0000',
      'del\u007f',
      'c1\u0085',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) }, // lone surrogates included
);
const code = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('SUBMITTED', 'IN PROGRESS', 'ROAD_CONTROL', 'ä') },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(128), 'x'.repeat(129)) },
  { weight: 2, arbitrary: text },
);
const coordinate = fc.oneof(
  { weight: 6, arbitrary: fc.double({ min: -90, max: 90, noNaN: true }) },
  { weight: 1, arbitrary: fc.double({ noNaN: true }) },
  { weight: 1, arbitrary: fc.integer({ min: -200, max: 200 }) },
  { weight: 2, arbitrary: fc.constantFrom(0, -0, 1e-7, 0.000001, 53.594365, 1e21, 180.5) },
);
const instant = fc
  .date({
    min: new Date('0001-01-01T00:00:00Z'),
    max: new Date('9999-12-31T23:59:59.999Z'),
    noInvalidDate: true,
  })
  .map((d) => d.toISOString());
const timestamp = fc.oneof(
  { weight: 6, arbitrary: instant },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '2024-02-30T00:00:00.000Z',
      '2024-01-01T00:00:00Z',
      '2024-01-01T01:00:00.000+01:00',
      '0000-01-01T00:00:00.000Z',
      '2024-01-01 00:00:00.000Z',
    ),
  },
);
const scalar = fc.oneof(text, fc.double(), fc.integer(), fc.constantFrom(-0, 1e21, 1e-7, true, false, null));
const extraKey = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('channel', 'district', 'b', 'a', 'Zone') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('__proto__', 'constructor', '', '1', '01', 'lat', 'id', 'longitude'),
  },
  // Names of modelled fields in another style (field-names.ts): `Lat` is `lat` on the general path.
  { weight: 1, arbitrary: fc.constantFrom('Lat', 'LONGITUDE', 'Location', 'ID', 'Created At', 'lon ') },
  { weight: 1, arbitrary: text },
);
const extraValue = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);

/**
 * A wire line with the known fields in wire order, then the unknown ones in the order given (written by hand:
 * an object would move index-like keys first): canonical whenever its values are.
 */
const wireLine = fc
  .record({
    id: fc.oneof({ weight: 4, arbitrary: text }, { weight: 1, arbitrary: fc.nat() }),
    status: code,
    destination: code,
    category: fc.option(text, { nil: null }),
    description: fc.option(text, { nil: null }),
    location: fc.option(fc.record({ lat: coordinate, lng: coordinate }), { nil: null }),
    address: fc.option(text, { nil: null }),
    createdAt: timestamp,
    updatedAt: timestamp,
    extra: fc.array(fc.tuple(extraKey, extraValue), { maxLength: 4 }),
  })
  .map(({ extra, ...known }) => {
    const head = JSON.stringify(known).slice(0, -1);
    return `${head}${extra.map(([k, v]) => `,${JSON.stringify(k)}:${JSON.stringify(v)}`).join('')}}`;
  });

/** Edits that take a line out of canonical form while (mostly) keeping it valid JSON. */
const edit = fc.constantFrom<(line: string, at: number) => string>(
  ...Array.from({ length: 8 }, () => (l: string) => l),
  (l, at) => spliceAfter(l, at, ':', ' '),
  (l, at) => spliceAfter(l, at, ',', ' '),
  (l) => l.replace('":"', '":"\\/'),
  (l) => l.replace(/[a-zé]/, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  (l) => l.replace(/"lat":(-?\d+\.\d+)/, '"lat":$10'),
  (l) => l.replace(/"lat":(-?\d+(\.\d+)?)/, '"lat":$1e0'),
  (l) => `${l.slice(0, -1)},"id":"again"}`,
  (l) => `${l.slice(0, -1)},"lat":1}`,
  (l) => l.replace(/,"updatedAt":"[^"]*"/, ''),
  (l) => l.replace(/"lat":[^,]+/, '"lat":0.0000001'),
  (l, at) =>
    `${l.slice(0, -1)},"n":${['1.0', '1e400', '12345678901234567890', '-0', '1E5', '1e+21'][at % 6]}}`,
  (l) => `${l}\r`,
  (l) => ` ${l}`,
);

function spliceAfter(line: string, at: number, char: string, insert: string): string {
  const i = line.indexOf(char, at % Math.max(1, line.length));
  return i < 0 ? line : `${line.slice(0, i + 1)}${insert}${line.slice(i + 1)}`;
}

function decodeBoth(lines: string[], limits: ExtraLimits) {
  const packer = new BlockPacker(4096);
  lines.forEach((l, i) => packer.add(Buffer.from(l, 'utf8'), i + 1));
  const block = packer.take();
  return [true, false].map((fastLane) => {
    const d = decodeBlock(block, known, 1024, limits, fastLane);
    return { ...d, rows: Buffer.from(d.rows.bytes).toString('utf8') };
  });
}

const limitsArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(DEFAULT_EXTRA_LIMITS) },
  fc.record({ maxDepth: fc.nat({ max: 2 }), maxKeys: fc.nat({ max: 3 }), maxBytes: fc.nat({ max: 80 }) }),
);

describe('the canonical-line fast lane', () => {
  it('stages exactly what the general path stages, and rejects nothing itself (property)', () => {
    let taken = 0;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(wireLine, edit, fc.nat()), { minLength: 1, maxLength: 6 }),
        limitsArb,
        (items, limits) => {
          const lines = items.map(([line, e, at]) => e(line, at));
          const [fast, general] = decodeBoth(lines, limits);
          expect(fast).toEqual(general);
          for (const l of lines) if (canonicalLine(l, Buffer.from(l), limits)) taken++;
        },
      ),
      { numRuns: 3000 },
    );
    expect(taken).toBeGreaterThan(500); // the comparison covers many lines the fast lane takes
  });

  it('takes the canonical JSON of every valid report with scalar unknown fields (property)', () => {
    fc.assert(
      fc.property(wireLine, (line) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          return; // a key repeated: not a report
        }
        const result = validateWireReport(parsed, DEFAULT_EXTRA_LIMITS);
        if (!result.ok) return;
        const extra = result.report.extra ?? {};
        const declinedByDesign = Object.keys(extra).some(
          (k) =>
            /^(0|[1-9]\d*)$/.test(k) ||
            isModelledKey(k) ||
            isRestyledName(k) ||
            (typeof extra[k] === 'object' && extra[k] !== null),
        );
        if (declinedByDesign) return;
        const json = canonicalJson(result.report);
        expect(canonicalLine(json, Buffer.from(json), DEFAULT_EXTRA_LIMITS)).toBeDefined();
      }),
      { numRuns: 3000 },
    );
  });

  it('stages a generated export line by the fast lane with the general path’s hashes', () => {
    const line =
      '{"id":"R-00000000","status":"REJECTED","destination":"ROAD_CONTROL","category":"TRAFFIC_LIGHT_FAULT",' +
      '"description":"Ampel \\"rot\\"","location":{"lat":53.594365,"lng":10.001397},"address":"Hauptstraße 154",' +
      '"createdAt":"2024-01-02T00:00:10.000Z","updatedAt":"2024-01-18T01:56:03.000Z","district":"Harburg","channel":7}';
    expect(canonicalLine(line, Buffer.from(line), DEFAULT_EXTRA_LIMITS)).toBeDefined();
    const [fast, general] = decodeBoth([line], DEFAULT_EXTRA_LIMITS);
    expect(fast).toEqual(general);
    const staged = JSON.parse(fast!.rows) as { h: string; ph: string; x: string };
    expect(staged.h).not.toBe(staged.ph); // a number and unsorted keys: the CSV projection differs
    expect(JSON.parse(staged.x)).toEqual({ district: 'Harburg', channel: 7 });
  });

  it('leaves a number it would not write the same way to the general path, whose byte limit counts it as sent', () => {
    // `1E5` is stored as sent: `{"n":1E5}` is 9 bytes (`{"n":100000}`, the double's text, would be 12).
    const line =
      '{"id":"R-1","status":"SUBMITTED","destination":"ROAD_CONTROL","category":null,"description":null,' +
      '"location":null,"address":null,"createdAt":"2024-01-02T00:00:10.000Z","updatedAt":"2024-01-02T00:00:10.000Z","n":1E5}';
    const limits = { ...DEFAULT_EXTRA_LIMITS, maxBytes: 8 };
    expect(canonicalLine(line, Buffer.from(line), limits)).toBeUndefined();
    const [fast, general] = decodeBoth([line], limits);
    expect(fast).toEqual(general);
    expect(general!.rejects[0]!.issues[0]!.message).toContain('unknown fields of 9 bytes exceed 8 bytes');
    const [, within] = decodeBoth([line], { ...limits, maxBytes: 9 });
    expect(within!.rejects).toEqual([]);
  });

  it('leaves a line longer than the text limit to the general path, which rejects its text', () => {
    const description = 'x'.repeat(REPORT_RULES.textMaxLength + 1);
    const line =
      `{"id":"R-1","status":"SUBMITTED","destination":"ROAD_CONTROL","category":null,"description":"${description}",` +
      '"location":null,"address":null,"createdAt":"2024-01-02T00:00:10.000Z","updatedAt":"2024-01-02T00:00:10.000Z"}';
    const [fast, general] = decodeBoth([line], DEFAULT_EXTRA_LIMITS);
    expect(fast).toEqual(general);
    expect(general!.rejects[0]!.issues[0]!.path).toBe('description');
  });
});
