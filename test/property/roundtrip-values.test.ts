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
