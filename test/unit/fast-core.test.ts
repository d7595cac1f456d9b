import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fastCore } from '../../src/schema/fast-core.js';
import {
  validateCsvReport,
  validateCsvReportWithZod,
  validateWireReport,
  validateWireReportWithZod,
} from '../../src/schema/report.js';
import { toWire } from '../../src/schema/wire-format.js';
import { generateDataset } from '../../src/simulator/generate.js';

// The hot path must agree with the zod schema (the source of truth) on accept/reject, the report and the
// issues, for common records and for every kind of odd or broken field (speed never buys
// silent acceptance of bad data).

const base = {
  id: 'R-1',
  status: 'SUBMITTED',
  destination: 'ROAD_CONTROL',
  category: 'Pothole',
  description: 'Loch in der Straße',
  location: { lat: 50.94, lng: 6.96 },
  address: 'Domkloster 4',
  createdAt: '2024-02-16T21:26:00.000Z',
  updatedAt: '2024-02-17T08:00:00.000Z',
};

// Lone surrogates (a JSON `\ud800` escape parses to one) have no UTF-8 form: refused by both paths.
const strings = [
  '',
  ' ',
  '\u00a0',
  '\t\n',
  'x',
  ' x ',
  'ä',
  'a'.repeat(129),
  'a'.repeat(257),
  'lone-\ud800',
  'lone-\udbff',
  '\udc00',
  'pair-\ud83d\ude00',
  'nul-\u0000',
  '\ufeffbom',
];
const odd: unknown[] = [undefined, null, 0, 7, -1, 1.5, -0, true, {}, [], ...strings];
const coordinates: unknown[] = [
  ...odd,
  90,
  -90,
  90.0001,
  180,
  -180.5,
  Number.POSITIVE_INFINITY,
  '50.5',
  ' 50.5 ',
  '-0',
  '1e1',
  '1e999',
  '5,5',
  '0x10',
  '.5',
];
const timestamps: unknown[] = [
  ...odd,
  '2024-02-16T21:26:00.000Z',
  '2024-02-29T00:00:00.000Z',
  '2023-02-29T00:00:00.000Z',
  '2000-02-29T23:59:59.999Z',
  '1900-02-29T00:00:00.000Z',
  '0000-02-29T00:00:00.000Z',
  '2024-13-01T00:00:00.000Z',
  '2024-04-31T00:00:00.000Z',
  '2024-01-01T24:00:00.000Z',
  '2024-01-01T23:60:00.000Z',
  '2024-01-01T23:59:60.000Z',
  '2024-01-01t00:00:00.000z',
  '2024-01-01T00:00:00.000+00:00',
  '2024-01-01T00:00:00Z',
  '2024-01-01 00:00:00.5+01:00',
  '2024-01-01T00:00:00.000',
  '2024-1-01T00:00:00.000Z',
  '2024-01-01T00:00:00.0000Z',
  '２０２４-01-01T00:00:00.000Z',
  // The storable range in UTC: years 0001–9999 (year 10000 failed every run in DuckDB's cast).
  '9999-12-31T23:59:59-01:00',
  '9999-12-31T23:59:59.999Z',
  '9999-12-31T23:59:59.999+00:00',
  '0001-01-01T00:00:00.000Z',
  '0001-01-01T00:30:00+01:00',
  '0001-01-01T00:30:00-01:00',
  '0000-12-31T23:59:59.999Z',
  '+010000-01-01T00:00:00.000Z',
  '-000001-01-01T00:00:00.000Z',
  '275760-09-13T00:00:00.000Z',
];
const texts: unknown[] = [...odd, 'a'.repeat(1_000_000), 'a'.repeat(1_000_001)];

/** Every base field replaced by every odd value of its kind, one at a time, plus location variants. */
function wireCorpus(): unknown[] {
  const deep = (depth: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = { a: v };
    return v;
  };
  const corpus: unknown[] = [
    base,
    { ...base, extraField: 1, nested: { a: [1] } },
    // Unknown fields past the bounds (depth 64, 1,000 keys, 64 KiB), or holding a lone surrogate.
    { ...base, nested: deep(64) },
    { ...base, nested: deep(65) },
    { ...base, nested: deep(100_000) },
    { ...base, ['\ud800key']: 1 },
    { ...base, note: 'lone-\ud800' },
    { ...base, nested: { ['\udfff']: [1] } },
    { ...base, many: Array.from({ length: 1000 }, (_, i) => i) },
    { ...base, many: Array.from({ length: 1001 }, (_, i) => i) },
    { ...base, big: 'x'.repeat(65_000) },
    { ...base, big: 'x'.repeat(65_536) },
    { ...base, big: 'ä'.repeat(40_000) },
    { ...base, category: 'lone-\ud800', nested: deep(100) },
  ];
  const fields: Record<string, unknown[]> = {
    id: [...odd, 'a'.repeat(256), 42, 2 ** 53, -5, 1.5],
    status: [...odd, 'a'.repeat(128)],
    destination: odd,
    category: texts,
    description: texts,
    address: texts,
    createdAt: timestamps,
    updatedAt: timestamps,
  };
  for (const [field, values] of Object.entries(fields)) {
    for (const v of values) corpus.push({ ...base, [field]: v });
  }
  for (const lat of coordinates) {
    corpus.push({ ...base, location: { lat, lng: 6.9 } });
    corpus.push({ ...base, location: { lat: 50, lng: lat } });
    corpus.push({ ...base, location: { lat, lng: lat } });
  }
  const { location: _drop, ...noLocation } = base;
  corpus.push(
    { ...base, location: null },
    { ...base, location: undefined },
    { ...base, location: [1, 2] },
    { ...base, location: 'here' },
    { ...base, location: { latitude: 50, longitude: 6 } },
    { ...noLocation },
    { ...noLocation, lat: 50, lon: 6 },
    { ...noLocation, latitude: '50.1', longitude: '6.2' },
    { ...noLocation, lat: 50 },
    null,
    [],
    'text',
    42,
  );
  return corpus;
}

/** A short label of a corpus value (JSON.stringify overflows on the deeply nested ones). */
function label(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return 'a deeply nested value';
  }
}

describe('fastCore (the hot path of report validation)', () => {
  it('takes the common record, so the fast path is really used', () => {
    const r = fastCore(
      'R-1',
      'SUBMITTED',
      'ROAD_CONTROL',
      null,
      'x',
      50,
      6,
      undefined,
      '2024-01-01T00:00:00.000Z',
      undefined,
    );
    expect(r).toEqual({
      id: 'R-1',
      status: 'SUBMITTED',
      destination: 'ROAD_CONTROL',
      category: null,
      description: 'x',
      lat: 50,
      lng: 6,
      address: null,
      createdAt: '2024-01-01T00:00:00.000Z',
      updatedAt: '2024-01-01T00:00:00.000Z',
    });
  });

  it('agrees with zod on every NDJSON record of the corpus (accept/reject, report, issues)', () => {
    const corpus = wireCorpus();
    expect(corpus.length).toBeGreaterThan(300);
    let accepted = 0;
    for (const value of corpus) {
      const expected = validateWireReportWithZod(value);
      expect(validateWireReport(value), label(value)).toEqual(expected);
      if (expected.ok) accepted++;
    }
    // Both kinds are in the corpus in numbers.
    expect(accepted).toBeGreaterThan(50);
    expect(corpus.length - accepted).toBeGreaterThan(100);
  });

  it('keeps -0 and numbers exactly as zod does', () => {
    const r = validateWireReport({ ...base, location: { lat: -0, lng: 0.1 + 0.2 } });
    expect(r).toEqual(validateWireReportWithZod({ ...base, location: { lat: -0, lng: 0.1 + 0.2 } }));
    expect(r.ok && Object.is(r.report.lat, -0) && r.report.lng === 0.30000000000000004).toBe(true);
  });

  it('agrees with zod on CSV rows (text cells, empty cells, extra columns)', () => {
    let n = 0;
    for (const value of wireCorpus()) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
      const v = value as Record<string, unknown>;
      const loc = (v.location ?? {}) as Record<string, unknown>;
      const cell = (x: unknown) => (x === undefined || x === null ? null : String(x));
      const row: Record<string, string | null | undefined> = {
        id: cell(v.id),
        status: cell(v.status),
        destination: cell(v.destination),
        category: cell(v.category),
        description: cell(v.description),
        lat: cell(loc.lat),
        lng: cell(loc.lng),
        address: cell(v.address),
        createdAt: cell(v.createdAt),
        updatedAt: v.updatedAt === undefined ? undefined : cell(v.updatedAt),
        channel: n % 3 === 0 ? 'WEB' : n % 3 === 1 ? '' : null,
      };
      expect(validateCsvReport(row), JSON.stringify(row).slice(0, 200)).toEqual(
        validateCsvReportWithZod(row),
      );
      n++;
    }
    expect(n).toBeGreaterThan(300);
  });

  it('agrees with zod on generated reports and on the real sample', () => {
    const lines = readFileSync(new URL('../../data/sample/reports.ndjson', import.meta.url), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
    const values: unknown[] = [];
    for (const l of lines) {
      try {
        values.push(JSON.parse(l));
      } catch {
        // malformed lines of the sample are the extract stage's business
      }
    }
    for (const e of generateDataset(500, 3).exportEntries()) {
      if (e.kind === 'report') values.push(JSON.parse(JSON.stringify(toWire(e.report))));
    }
    expect(values.length).toBeGreaterThan(500);
    for (const value of values) expect(validateWireReport(value)).toEqual(validateWireReportWithZod(value));
  });
});

describe('values the warehouse cannot hold', () => {
  it('quarantines timestamps outside 0001–9999 UTC, lone surrogates and unbounded unknown fields with a reason', () => {
    const issue = (value: unknown) => {
      const r = validateWireReport(value);
      return r.ok ? 'accepted' : r.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
    };
    expect(issue({ ...base, createdAt: '9999-12-31T23:59:59-01:00' })).toMatch(
      /createdAt: outside the storable range/,
    );
    expect(issue({ ...base, id: 'lone-\ud800' })).not.toBe('accepted');
    expect(issue({ ...base, description: 'x\udbff' })).toMatch(/description: .*lone UTF-16 surrogate/);
    let v: unknown = 1;
    for (let i = 0; i < 100_000; i++) v = [v];
    expect(issue({ ...base, deep: v })).toMatch(/deeper than 64 levels/);
    expect(issue({ ...base, big: 'x'.repeat(70_000) })).toMatch(/exceed 65536 bytes/);
    expect(validateWireReport({ ...base, category: '' })).toMatchObject({
      ok: true,
      report: { category: '' },
    });
  });
});
