import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCsvPage } from '../../src/extract/csv.js';
import { validateCsvReport, validateWireReport } from '../../src/schema/report.js';
import { isRestyledName } from '../../src/schema/field-names.js';
import { isModelledKey } from '../../src/schema/wire-format.js';
import { flattenStats } from '../../src/schema/flatten-stats.js';
import { computeStats } from '../../src/schema/stats.js';
import { validateWireLine } from '../../src/schema/wire-line.js';

// Names an upstream may put in a header or a key: prototype names, empty, dotted, any text. Not a modelled
// field's name in another style (`lnG`, `Created At`): those are read as the field (field-names.test.ts).
const awkwardName = fc
  .oneof(
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', ''),
    fc.constantFrom('note', 'a.b', 'location.accuracy', 'ward', '0', 'x y'),
    fc.string({ maxLength: 6 }).filter((s) => !/[\r\n"]/.test(s)),
  )
  .filter((name) => !isRestyledName(name));
// A column an upstream may repeat: a known one or an unknown one.
const KNOWN = ['id', 'status', 'destination', 'category', 'description', 'address', 'createdAt', 'updatedAt'];

/** A cell: null (an unquoted empty cell), '' (a quoted empty one) or text (CSV-quoted as needed). */
const cell = fc.oneof(fc.constant(null), fc.constant(''), fc.constantFrom('a', 'b', 'x,y', 'say "hi"', '5'));

function csvField(value: string | null): string {
  if (value === null) return '';
  return `"${value.replace(/"/g, '""')}"`;
}

function knownCell(column: string, row: number): string {
  switch (column) {
    case 'id':
      return `r${row}`;
    case 'status':
      return 'SUBMITTED';
    case 'destination':
      return 'ROAD_CONTROL';
    case 'createdAt':
    case 'updatedAt':
      return '2024-01-01T00:00:00.000Z';
    default:
      return `${column} ${row}`;
  }
}

describe('no column or key is silently dropped or overridden', () => {
  it('a CSV row keeps every column of any header, or is quarantined with an issue naming the column', () => {
    const page = fc.record({
      extra: fc.array(awkwardName, { maxLength: 5 }),
      repeats: fc.array(fc.constantFrom(...KNOWN), { maxLength: 2 }),
      rows: fc.array(fc.array(cell, { minLength: 12, maxLength: 12 }), { minLength: 1, maxLength: 4 }),
      agree: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
    });
    fc.assert(
      fc.property(page, ({ extra, repeats, rows, agree }) => {
        const unknown = extra.filter((n) => !isModelledKey(n));
        const header = [...KNOWN, ...repeats, ...unknown];
        // Cells per row: known columns valid; a repeated known column a copy or (when not `agree`) different.
        const grid = rows.map((cells, r) =>
          header.map((column, c): string | null => {
            if (c < KNOWN.length) return knownCell(column, r);
            if (c < KNOWN.length + repeats.length) return agree[r] ? knownCell(column, r) : 'other';
            return cells[c - KNOWN.length - repeats.length] ?? null;
          }),
        );
        const body = [header.map(csvField), ...grid.map((row) => row.map(csvField))]
          .map((cells) => cells.join(','))
          .join('\r\n');
        const parsed = parseCsvPage(Buffer.from(`${body}\r\n`), {
          page: 1,
          maxRecordBytes: 1 << 20,
          rejectRawMaxBytes: 1 << 16,
          url: 'http://up/reports.csv',
        });
        expect(parsed.records).toHaveLength(rows.length);
        parsed.records.forEach((record, r) => {
          const cells = grid[r]!;
          // For each name, the distinct cells the row gives it.
          const byName = new Map<string, Set<string | null>>();
          header.forEach((name, c) => byName.set(name, (byName.get(name) ?? new Set()).add(cells[c]!)));
          const conflicting = [...byName].filter(([, values]) => values.size > 1).map(([name]) => name);
          if (record.kind === 'malformed') {
            expect(conflicting.length).toBeGreaterThan(0);
            expect(conflicting).toContain(record.issues[0]!.path);
            expect(record.issues[0]!.message).toContain(JSON.stringify(record.issues[0]!.path));
            expect(record.recordId).toBe(conflicting.includes('id') ? undefined : `r${r}`);
            return;
          }
          expect(conflicting).toEqual([]);
          const result = validateCsvReport(record.value as Record<string, string | null>);
          expect(result.ok).toBe(true);
          if (!result.ok) return;
          for (const name of unknown) {
            const value = [...byName.get(name)!][0]!;
            const extra = result.report.extra;
            if (value === null) expect(extra !== null && Object.hasOwn(extra, name)).toBe(false);
            else expect(extra !== null && Object.hasOwn(extra, name) ? extra[name] : undefined).toBe(value);
          }
        });
      }),
      { numRuns: 300 },
    );
  });

  it('a JSON object keeps every key of any name in extra, or is quarantined naming the key', () => {
    const record = fc.record({
      keys: fc.array(fc.tuple(awkwardName, fc.jsonValue({ maxDepth: 1 })), { maxLength: 5 }),
      locationKey: fc.option(fc.constantFrom('accuracy', 'type', 'human_address'), { nil: undefined }),
    });
    fc.assert(
      fc.property(record, ({ keys, locationKey }) => {
        const unknown = keys.filter(([k]) => !isModelledKey(k));
        const location =
          locationKey === undefined
            ? ''
            : `,"location":{"lat":1.5,"lng":2.5,${JSON.stringify(locationKey)}:7}`;
        const text =
          `{"id":"r1","status":"SUBMITTED","destination":"ROAD_CONTROL","createdAt":"2024-01-01T00:00:00Z"${location}` +
          unknown.map(([k, v]) => `,${JSON.stringify(k)}:${JSON.stringify(v)}`).join('') +
          '}';
        const result = validateWireLine(text, JSON.parse(text) as unknown);
        const names = unknown.map(([k]) => k);
        if (locationKey !== undefined) names.push(`location.${locationKey}`);
        const repeated = names.find((n, i) => names.indexOf(n) !== i);
        if (repeated !== undefined) {
          expect(result.ok).toBe(false);
          if (!result.ok)
            expect(JSON.stringify(result.issues)).toContain(JSON.stringify(repeated).slice(1, -1));
          return;
        }
        expect(result.ok).toBe(true);
        if (!result.ok) return;
        for (const [k, v] of unknown)
          expect(JSON.stringify(result.report.extra?.[k])).toBe(JSON.stringify(v));
        if (locationKey !== undefined) expect(result.report.extra?.[`location.${locationKey}`]).toBe(7);
        expect(Object.keys(result.report.extra ?? {}).sort()).toEqual([...names].sort());
      }),
      { numRuns: 300 },
    );
  });

  it('a status or destination of any name is counted in /stats; every numeric leaf has its own metric', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            awkwardName.filter((n) => n.trim() !== ''),
            awkwardName,
          ),
          { minLength: 1, maxLength: 8 },
        ),
        (pairs) => {
          const stats = computeStats(pairs.map(([status, destination]) => ({ status, destination })));
          const byStatus = new Map<string, number>();
          for (const [s] of pairs) byStatus.set(s, (byStatus.get(s) ?? 0) + 1);
          expect(Object.keys(stats.byStatus).sort()).toEqual([...byStatus.keys()].sort());
          for (const [s, n] of byStatus) expect(stats.byStatus[s]).toBe(n);
          // Round trip through JSON (as a body is served and read): every count is one metric of its own.
          const metrics = flattenStats(JSON.parse(JSON.stringify(stats)) as unknown);
          expect(new Set(metrics.map((m) => m.metric)).size).toBe(metrics.length);
          expect(metrics.reduce((a, m) => a + m.value, 0)).toBe(3 * pairs.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('nested keys that flatten to the same dotted text stay two metrics', () => {
    const metrics = flattenStats(JSON.parse('{"a.b":1,"a":{"b":2},"":{"":3},"byStatus":{"IN.PROGRESS":4}}'));
    expect(metrics).toEqual([
      { metric: '["a.b"]', value: 1 },
      { metric: 'a.b', value: 2 },
      { metric: '[""][""]', value: 3 },
      { metric: 'byStatus["IN.PROGRESS"]', value: 4 },
    ]);
  });

  it('a location given as a field and inside `location` is quarantined, not settled', () => {
    const r = validateWireReport({
      id: '1',
      status: 'SUBMITTED',
      destination: 'ROAD_CONTROL',
      createdAt: '2024-01-01T00:00:00Z',
      location: { lat: 1, lng: 2, accuracy: 5 },
      'location.accuracy': 9,
    });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]?.path).toBe('location.accuracy');
  });
});
