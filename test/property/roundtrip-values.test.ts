import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { probes } from '../helpers/roundtrip-arbitraries.js';
import {
  expectedLine,
  probeCsvRows,
  startProbeServer,
  syncAndRead,
  type Probe,
  type Readback,
} from '../helpers/roundtrip.js';
import { tempDir } from '../helpers/sync.js';

/**
 * Legal but unusual values (every timestamp form RFC 3339 and ISO 8601 allow, hostile ids and text of every
 * plane, boundary coordinates in any spelling, unknown fields of every JSON type) served by an upstream as
 * its NDJSON export, its paged CSV export and its list, synced by the real pipeline into real DuckDB files,
 * then read back through SQL and every format of the reader: each value keeps its meaning.
 */

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** The reader's CSV body as cells by id and column. */
function csvCells(r: Readback): Map<string, Map<string, string>> {
  const [header, ...rows] = r.csv;
  return new Map(rows.map((row) => [row[0]!, new Map(header!.map((h, i) => [h, row[i]!]))]));
}

/** What the reader's CSV must hold for `p` in `column`: the upstream's cell, the instant, the number. */
function expectedCell(p: Probe, column: string, upstream: Map<string, string | null>): string | number {
  if (column === 'createdAt') return p.createdAt.iso;
  if (column === 'updatedAt') return (p.updatedAt ?? p.createdAt).iso;
  if (column === 'lat' || column === 'lng') return p.location?.[column].value ?? '';
  if (column === 'id') return p.id;
  return upstream.get(column) ?? '';
}

function checkNdjsonWarehouse(all: readonly Probe[], r: Readback): void {
  const lines = r.ndjson.split('\n').filter((l) => l !== '');
  expect([...lines].sort()).toEqual(all.map(expectedLine).sort());
  // The export in creation order, the list newest first: the same reports.
  const created = lines.map((l) => (JSON.parse(l) as { createdAt: string }).createdAt);
  expect(created).toEqual([...created].sort());
  const list = JSON.parse(r.list) as Array<{ createdAt: string }>;
  expect(list.map((x) => x.createdAt)).toEqual([...created].reverse());
  for (const line of lines) expect(r.list).toContain(line);
  // GeoJSON: [lng, lat] as numbers, properties the wire report without its location.
  const features = (
    JSON.parse(r.geojson) as { features: Array<{ id: string; geometry: { coordinates: number[] } }> }
  ).features;
  const located = all.filter((p) => p.location !== null);
  expect(features.map((f) => f.id).sort()).toEqual(located.map((p) => p.id).sort());
  for (const p of located) {
    const f = features.find((x) => x.id === p.id)!;
    expect(f.geometry.coordinates).toEqual([p.location!.lng.value, p.location!.lat.value]);
    const properties = expectedLine(p).replace(/"location":\{[^}]*\},/, '');
    expect(r.geojson).toContain(`"properties":${properties}`);
  }
  // CSV: every cell as the upstream's CSV export has it, timestamps in UTC, coordinates by value.
  const { header, rows } = probeCsvRows(all);
  const served = csvCells(r);
  expect(served.size).toBe(all.length);
  all.forEach((p, i) => {
    const upstream = new Map(header.map((h, c) => [h, rows[i]![c]!]));
    const cells = served.get(p.id)!;
    for (const [column, cell] of cells) {
      const want = expectedCell(p, column, upstream);
      expect(typeof want === 'number' ? Number(cell) : cell, `${p.id} ${column}`).toEqual(want);
    }
  });
}

describe('values round-trip from every upstream format to every reader format', () => {
  it('NDJSON, paged CSV and list syncs store each value with its meaning, and the reader serves it so', async () => {
    await fc.assert(
      fc.asyncProperty(probes(12), async (all) => {
        const server = await startProbeServer(all);
        try {
          const [ndjson, csv, recent] = await Promise.all([
            syncAndRead(server.url, tmp.dir, 'ndjson'),
            syncAndRead(server.url, tmp.dir, 'csv'),
            syncAndRead(server.url, tmp.dir, 'recent'),
          ]);
          for (const r of [ndjson, csv, recent]) {
            for (const run of r.runs) expect(run.status, run.error?.message).toBe('succeeded');
            expect(r.rejected).toEqual([]);
            expect([...r.stored.keys()].sort()).toEqual(all.map((p) => p.id).sort());
          }
          checkNdjsonWarehouse(all, ndjson);
          // The list is the same JSON as the export: the same warehouse, the same bodies.
          expect(recent.stored).toEqual(ndjson.stored);
          expect(recent.ndjson).toBe(ndjson.ndjson);
          // CSV cannot tell a number from its text or null from a missing field: the known fields match,
          // and the reader's CSV of either warehouse is the same cells.
          for (const [id, row] of csv.stored) {
            const { extra: _a, ...known } = row;
            const { extra: _b, ...fromJson } = ndjson.stored.get(id)!;
            expect(known).toEqual(fromJson);
          }
          // (A column that is empty in every row is no field of a CSV reading: it may be left out.)
          const fromCsv = csvCells(csv);
          for (const [id, cells] of csvCells(ndjson)) {
            const other = fromCsv.get(id)!;
            for (const [column, cell] of cells) expect(other.get(column) ?? '', `${id} ${column}`).toBe(cell);
            for (const column of other.keys()) expect(cells.has(column), column).toBe(true);
          }
        } finally {
          await server.close();
        }
      }),
      { numRuns: 3, endOnFailure: true }, // no shrinking: each try is three pipeline runs,
    );
  }, 120_000);
});

/** A plain valid probe `p<i>`, created `i` seconds after 10:00, with `patch` applied. */
function plain(i: number, patch: Partial<Probe> = {}): Probe {
  const t = `2024-03-01T10:00:${String(i).padStart(2, '0')}`;
  return {
    ...{ idJson: `"p${i}"`, idCell: `p${i}`, id: `p${i}`, status: 'SUBMITTED', destination: 'ROAD_CONTROL' },
    ...{ category: null, description: 'd', address: null, location: null, extras: [], locationExtras: [] },
    ...{ createdAt: { text: `${t}Z`, iso: `${t}.000Z` }, updatedAt: null },
    ...patch,
  };
}

describe('records past a rule are quarantined by every source, with their id, location and reason', () => {
  it('a half location, a leap second, year 10000, unknown fields or a record over their limits', async () => {
    const half = {
      lat: { json: '47.5', cell: '47.5', value: 47.5 },
      lng: { json: 'null', cell: '', value: 0 },
    };
    const stamp = (text: string) => ({ text, iso: '' });
    const bad: Array<[Probe, RegExp]> = [
      [plain(1, { location: half }), /lat and lng must be given together/],
      [plain(2, { updatedAt: stamp('2016-12-31T23:59:60Z') }), /a leap second/],
      [plain(3, { updatedAt: stamp('9999-12-31T23:59:59.5-00:01') }), /outside the storable range/],
      [plain(4, { extras: [['x', `"${'y'.repeat(200)}"`]] }), /unknown fields of \d+ bytes exceed 128 bytes/],
      // Over REPORTS_MAX_RECORD_BYTES, one after the other: each still names its report.
      [plain(5, { description: 'x'.repeat(1100) }), /1024/],
      [plain(6, { description: 'é'.repeat(600) }), /1024/],
    ];
    const good = [plain(7), plain(8, { description: '=1+2' })];
    // Pages of 3: p5 and p6 are rows 2 and 3 of page 2.
    const all = [...bad.map(([p]) => p), ...good];
    const server = await startProbeServer(all);
    try {
      for (const target of ['ndjson', 'csv', 'recent'] as const) {
        const r = await syncAndRead(server.url, tmp.dir, target, {
          maxRecordBytes: 1024,
          extraMaxBytes: 128,
        });
        expect([...r.stored.keys()].sort(), target).toEqual(['p7', 'p8']);
        expect(r.rejected.length, target).toBe(bad.length);
        for (const [p, reason] of bad) {
          const reject = r.rejected.find((x) => x.record_id === p.id);
          expect(reject, `${target} ${p.id}`).toBeDefined();
          expect(String(reject!.issues), `${target} ${p.id}`).toMatch(reason);
          expect(reject!.line, `${target} ${p.id}`).toBeGreaterThan(0);
          if (target === 'csv')
            expect([reject!.page, reject!.row]).toEqual([
              Math.ceil(Number(p.id.slice(1)) / 3),
              ((Number(p.id.slice(1)) - 1) % 3) + 1,
            ]);
        }
      }
    } finally {
      await server.close();
    }
  }, 60_000);
});
