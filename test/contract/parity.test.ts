import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';
import { query, tempDir } from '../helpers/sync.js';

const FEFF_FIXTURE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  'fixtures',
  'parity',
  'leading-feff.ndjson',
);

/**
 * Parity: after a sync of the real sample, the reader answers what the simulator (the reference
 * implementation of the upstream) answers, byte for byte, over a matrix of queries: each destination × each
 * status (plus an unknown code and no filter) × paging, on the list and the GeoJSON; and the stats, the
 * error bodies, and the CSV and NDJSON exports.
 *
 * One known difference, by design: the simulator's exports also leak the dataset's bad records ("warts"),
 * which the sync quarantines in `rejected_records` and the reader therefore never serves. For the export
 * formats the test removes exactly those records from the simulator's body (found by the line numbers the
 * sync recorded, and checked against the raw text it kept) and requires the rest to be byte-equal.
 */

interface Answer {
  status: number;
  type: string | null;
  body: string;
}

describe('parity of the reader with the simulator on the synced sample', () => {
  let s: SyncedReader;
  let tmp: ReturnType<typeof tempDir>;
  let destinations: Array<string | undefined>;
  let statuses: Array<string | undefined>;
  let quarantined: Array<{ line: number; raw: string }>;

  const ask = async (base: (path: string) => string, path: string): Promise<Answer> => {
    const res = await fetch(base(path));
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
  };
  const both = async (path: string) => ({
    simulator: await ask(s.simulator.api, path),
    reader: await ask(s.reader.api, path),
  });

  beforeAll(async () => {
    // The real sample plus reports whose text starts with U+FEFF (one is only U+FEFF): the binding used to
    // drop that character on every read (docs/known-issues.md).
    tmp = tempDir('reports-sync-parity-');
    const dataset = join(tmp.dir, 'reports.ndjson');
    writeFileSync(dataset, readFileSync(sampleDatasetPath(), 'utf8') + readFileSync(FEFF_FIXTURE, 'utf8'));
    s = await startSyncedReader({ dataset: await loadDataset(dataset) });
    const stats = JSON.parse((await ask(s.simulator.api, '/reports/stats')).body) as {
      byStatus: Record<string, number>;
      byDestination: Record<string, number>;
    };
    destinations = [...Object.keys(stats.byDestination), 'NO_SUCH_AUTHORITY', undefined];
    statuses = [...Object.keys(stats.byStatus), 'NO_SUCH_STATUS', undefined];
    quarantined = (
      await query(s.warehouse, 'SELECT line, raw FROM rejected_records WHERE run_id = $run ORDER BY line', {
        run: s.run.runId,
      })
    ).map((r) => ({ line: Number(r.line), raw: String(r.raw) }));
  });
  afterAll(async () => {
    await s?.close();
    tmp?.cleanup();
  });

  const filterQuery = (destination: string | undefined, status: string | undefined) =>
    [destination && `destination=${destination}`, status && `status=${status}`].filter(Boolean).join('&');

  it('the sync quarantined the sample’s bad records (what the export comparison removes)', () => {
    expect(quarantined.length).toBeGreaterThan(0);
    expect(destinations.length).toBeGreaterThan(5);
    expect(statuses.length).toBeGreaterThan(4);
  });

  it('serves the reports whose text starts with U+FEFF with it, as the simulator does', async () => {
    const F = '\uFEFF';
    const { simulator, reader } = await both(
      '/reports?destination=ROAD_CONTROL&status=SUBMITTED&pageSize=1000',
    );
    expect(reader).toEqual(simulator);
    const list = JSON.parse(reader.body) as Array<Record<string, unknown>>;
    expect(list.find((r) => r.id === 'FEFF-PARITY-1')).toMatchObject({
      category: `${F}Street Condition`,
      description: `${F}Text pasted from a Windows tool`,
      address: `${F}133 AVENUE & 231 STREET`,
      agency: `${F}DOT`,
    });
    expect(list.find((r) => r.id === 'FEFF-PARITY-2')).toMatchObject({
      description: F,
      address: F,
      agency: F,
    });
  });

  it('lists equal bodies for each destination × status × paging', async () => {
    const paging = ['', 'pageSize=7&page=3', 'pageSize=1000', 'page=500'];
    let compared = 0;
    let nonEmpty = 0;
    for (const destination of destinations) {
      for (const status of statuses) {
        for (const page of paging) {
          const q = [filterQuery(destination, status), page].filter(Boolean).join('&');
          const { simulator, reader } = await both(`/reports${q ? `?${q}` : ''}`);
          expect(simulator.status, q).toBe(200);
          expect(reader, q).toEqual(simulator);
          compared++;
          if (simulator.body !== '[]') nonEmpty++;
        }
      }
    }
    expect(compared).toBe(destinations.length * statuses.length * paging.length);
    expect(nonEmpty).toBeGreaterThan(compared / 3);
  });

  it('serves equal GeoJSON for each destination × status', async () => {
    for (const destination of destinations) {
      for (const status of statuses) {
        const q = filterQuery(destination, status);
        const { simulator, reader } = await both(`/reports.geojson${q ? `?${q}` : ''}`);
        expect(simulator.status, q).toBe(200);
        expect(reader, q).toEqual(simulator);
      }
    }
  });

  it('serves equal stats', async () => {
    const { simulator, reader } = await both('/reports/stats');
    expect(reader).toEqual(simulator);
  });

  it('answers bad queries, unknown paths and other methods with equal error bodies', async () => {
    for (const path of [
      '/reports?pageSize=-1',
      '/reports?pageSize=abc&foo=1&status=A&status=B',
      `/reports?destination=${encodeURIComponent('x\u0001')}`,
      '/reports.csv?pageSize=0',
      '/reports.geojson?pageSize=10',
      '/reports.ndjson?x=1',
      '/reports/stats?page=1',
      '/nothing',
    ]) {
      const { simulator, reader } = await both(path);
      expect(simulator.status, path).toBeGreaterThanOrEqual(400);
      expect(reader, path).toEqual(simulator);
    }
    const post = async (base: (p: string) => string) => {
      const res = await fetch(base('/reports'), { method: 'POST' });
      return { status: res.status, allow: res.headers.get('allow'), body: await res.text() };
    };
    expect(await post(s.reader.api)).toEqual(await post(s.simulator.api));
  });

  it('exports equal NDJSON once the quarantined records are removed from the simulator’s', async () => {
    const { simulator, reader } = await both('/reports.ndjson');
    expect([reader.status, reader.type]).toEqual([simulator.status, simulator.type]);
    const lines = simulator.body.split('\n');
    const drop = new Set(quarantined.map((q) => q.line));
    for (const q of quarantined) expect(lines[q.line - 1], `line ${q.line}`).toBe(q.raw);
    const kept = lines.filter((_, i) => !drop.has(i + 1)).join('\n');
    expect(reader.body.length).toBeGreaterThan(1_000_000);
    expect(reader.body).toBe(kept);
  });

  it('exports equal CSV once the quarantined records are removed from the simulator’s', async () => {
    // One page holds the whole sample, so page boundaries (which the leaked rows shift) do not matter.
    const { simulator, reader } = await both('/reports.csv?pageSize=10000');
    expect([reader.status, reader.type]).toEqual([simulator.status, simulator.type]);
    // Cut the simulator's body into records by parser offsets (UTF-8 bytes; quoted fields hold line breaks).
    const bytes = Buffer.from(simulator.body, 'utf8');
    const records = parse(bytes, { info: true, record_delimiter: '\r\n' }) as unknown as Array<{
      info: { bytes: number };
    }>;
    let start = 0;
    const pieces = records.map(({ info }) => {
      const piece = bytes.subarray(start, info.bytes).toString('utf8');
      start = info.bytes;
      return piece;
    });
    expect(pieces.join('')).toBe(simulator.body);
    // Record 0 is the header; data record n is export entry n, i.e. NDJSON line n of the same export.
    const drop = new Set(quarantined.map((q) => q.line));
    const kept = pieces.filter((_, i) => !drop.has(i)).join('');
    expect(kept.length).toBeLessThan(simulator.body.length);
    expect(reader.body).toBe(kept);
  });

  it('pages the CSV export the same way (Link rel="next" on every page but the last)', async () => {
    const links = async (base: (p: string) => string) => {
      const out: Array<string | null> = [];
      for (const page of [1, 2, 3]) {
        const res = await fetch(base(`/reports.csv?pageSize=3000&page=${page}`));
        await res.arrayBuffer();
        out.push(
          res.headers.get('link') &&
            new URL(/<([^>]+)>/.exec(res.headers.get('link') ?? '')?.[1] ?? '', res.url).search,
        );
      }
      return out;
    };
    expect(await links(s.reader.api)).toEqual(await links(s.simulator.api));
  });
});
