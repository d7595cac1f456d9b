import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, onTestFinished } from 'vitest';
import { CSV_COLUMNS } from '../../src/schema/wire-format.js';
import { toCsvRecords } from '../../src/schema/to-csv-records.js';
import type { ExportSource } from '../../src/sync/export-source.js';
import { csvSource } from '../../src/sync/sources/csv-source.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

// Property: whatever records an upstream sends (any text: empty, unicode, lone surrogates; timestamps across
// and beyond the storable range; any numbers; nested unknown fields), a sync through NDJSON and through CSV
// never fails, accounts for every record (loaded + rejected = read, each reject stored with a reason), and
// every text field it loads reads back from the warehouse byte for byte (compared as UTF-8 bytes with
// `encode`, which the client binding cannot alter).

const TEXT_FIELDS = ['category', 'description', 'address'] as const;

const text = fc.oneof(
  fc.constant(''),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 8 }), // lone surrogates included
  fc.constantFrom('\ud800', 'x\udbff', '\ufeffbom', 'a,b "q"', 'line\r\nbreak', 'nul\u0000', 'Straße 😀'),
);
const timestamp = fc.oneof(
  fc
    .date({ min: new Date(Date.UTC(-100, 0, 1)), max: new Date(Date.UTC(10_100, 0, 1)), noInvalidDate: true })
    .map((d) => d.toISOString()),
  fc.constantFrom(
    '9999-12-31T23:59:59-01:00',
    '9999-12-31T23:59:59.999Z',
    '0001-01-01T00:30:00+01:00',
    '0000-12-31T23:00:00Z',
    '2024-02-30T00:00:00Z',
  ),
);
const coordinate = fc.oneof(fc.constant(null), fc.double(), fc.double({ min: -90, max: 90, noNaN: true }));
let deep: unknown = 1;
for (let i = 0; i < 70; i++) deep = { d: deep };
const extra = fc.oneof(fc.constant(undefined), fc.jsonValue({ maxDepth: 3 }), fc.constant(deep));

const record = fc.record({
  suffix: fc.oneof(fc.constant(''), text),
  status: fc.oneof(fc.constant('SUBMITTED'), text),
  category: fc.oneof(fc.constant(null), text),
  description: fc.oneof(fc.constant(null), text),
  address: fc.oneof(fc.constant(null), text),
  lat: coordinate,
  lng: coordinate,
  createdAt: timestamp,
  note: extra,
});
type Generated = (typeof record extends fc.Arbitrary<infer T> ? T : never) & { id: string };

function ndjsonBody(records: Generated[]): Buffer {
  const lines = records.map((r) =>
    JSON.stringify({
      id: r.id,
      status: r.status,
      destination: 'ROAD_CONTROL',
      category: r.category,
      description: r.description,
      location: r.lat === null || r.lng === null ? null : { lat: r.lat, lng: r.lng },
      address: r.address,
      createdAt: r.createdAt,
      note: r.note,
    }),
  );
  return Buffer.from(lines.map((l) => `${l}\n`).join(''));
}

function csvBody(records: Generated[]): Buffer {
  const rows = records.map((r) => [
    r.id,
    r.status,
    'ROAD_CONTROL',
    r.category,
    r.description,
    r.lat === null ? null : String(r.lat),
    r.lng === null ? null : String(r.lng),
    r.address,
    r.createdAt,
    r.createdAt,
  ]);
  // UTF-8 on the wire: a lone surrogate cannot travel in a CSV body (it arrives as U+FFFD, valid text).
  return Buffer.from(toCsvRecords([[...CSV_COLUMNS], ...rows]), 'utf8');
}

/** The text as it arrives through `source`: NDJSON escapes keep every code unit; CSV bytes are UTF-8. */
function onWire(value: string | null, source: ExportSource): string | null {
  return value === null || source === ndjsonSource ? value : Buffer.from(value, 'utf8').toString('utf8');
}

describe('values and text (property)', () => {
  it('any generated export syncs through NDJSON and CSV: no failed run, every record accounted, text byte-exact', async () => {
    let bodies: { ndjson: Buffer; csv: Buffer } = { ndjson: Buffer.alloc(0), csv: Buffer.alloc(0) };
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('.ndjson')) {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(bodies.ndjson);
      } else if (url.searchParams.get('page') === '1') {
        res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8' }).end(bodies.csv);
      } else {
        res.writeHead(200, { 'content-type': 'text/csv; charset=utf-8' }).end(`${CSV_COLUMNS.join(',')}\r\n`);
      }
    });
    const tmp = tempDir('reports-sync-values-prop-');
    onTestFinished(async () => {
      await server.close();
      tmp.cleanup();
    });
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 8 }), async (generated) => {
        const records = generated.map((r, i) => ({ ...r, id: `r${i}-${r.suffix}` }));
        bodies = { ndjson: ndjsonBody(records), csv: csvBody(records) };
        for (const source of [ndjsonSource, csvSource]) {
          const config = testConfig(server.url, join(tmp.dir, `w${n++}.duckdb`), {
            maxRejectRatio: 1,
            decodeWorkers: 0,
            csvPageSize: 100,
          });
          const warehouse = await openTestWarehouse(config);
          try {
            const summary = await syncOnce(warehouse, config, source);
            expect(summary.status, `${source.name}: ${JSON.stringify(summary.error)}`).toBe('succeeded');
            const c = summary.counters;
            expect(c.recordsRead).toBe(records.length);
            expect(c.recordsLoaded + c.recordsRejected).toBe(c.recordsRead);
            const rejects = await query(
              warehouse,
              `SELECT line, json_array_length(issues) AS issues FROM rejected_records WHERE run_id = $run`,
              { run: summary.runId },
            );
            expect(rejects).toHaveLength(c.recordsRejected);
            for (const r of rejects) expect(r.issues).toBeGreaterThan(0);
            const rows = await query(
              warehouse,
              `SELECT hex(encode(id)) AS id, ${TEXT_FIELDS.map((f) => `hex(encode(${f})) AS ${f}`).join(', ')}
               FROM reports`,
            );
            expect(rows).toHaveLength(c.recordsLoaded);
            const byId = new Map(records.map((r) => [onWire(r.id, source), r]));
            for (const row of rows) {
              const id = Buffer.from(String(row.id), 'hex').toString('utf8');
              const sent = byId.get(id);
              expect(sent, `${source.name}: loaded id ${JSON.stringify(id)} was sent`).toBeDefined();
              for (const field of TEXT_FIELDS) {
                const expected = onWire(sent![field], source);
                const stored = row[field] === null ? null : Buffer.from(String(row[field]), 'hex');
                expect(stored === null ? null : stored.toString('hex'), `${source.name} ${field}`).toBe(
                  expected === null ? null : Buffer.from(expected, 'utf8').toString('hex'),
                );
              }
            }
          } finally {
            warehouse.close();
          }
        }
      }),
      { numRuns: 20 },
    );
  }, 180_000);
});
