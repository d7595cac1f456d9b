import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';
import { syncTargetOnce, tempDir } from '../helpers/sync.js';

/**
 * Parity as a property: for any query a client may send (every parameter the upstream documents, alone, in
 * combination, repeated, empty, unknown, mis-cased, out of range, in unicode), the reader over the synced
 * warehouse answers what the simulator answers: status, content type and body, on the list, the GeoJSON,
 * the stats, the CSV pages and the NDJSON export.
 *
 * Two real datasets: the sample (its quarantined warts leak into the simulator's exports only, so export
 * bodies are compared only where they must be equal: errors), and the Köln and Chicago Open311 captures
 * (test/fixtures/real/SOURCE.md) with the cities' own codes (`open`, `Straßenlaterne defekt`,
 * `DIM, Public Way Management - CDOT`), no wart, two simulated days after a first sync: every body equal.
 */

interface Answer {
  status: number;
  type: string | null;
  /** The `page`/`pageSize` of a `Link: rel="next"` (the simulator's is absolute, the reader's relative). */
  next: string | null;
  body: string;
}

const REAL = join(import.meta.dirname, '..', 'fixtures', 'real');
const ENDPOINTS = [
  '/reports',
  '/reports',
  '/reports.geojson',
  '/reports.csv',
  '/reports.ndjson',
  '/reports/stats',
];

async function ask(url: string): Promise<Answer> {
  const res = await fetch(url);
  const link = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  const next = link === undefined ? null : new URL(link, url).searchParams.toString();
  return { status: res.status, type: res.headers.get('content-type'), next, body: await res.text() };
}

/** Query values for a dataset: its codes as sent and as a client may mistype them, and edge integers. */
function queryArbitrary(codes: string[]): fc.Arbitrary<string> {
  const code = fc
    .constantFrom(...codes)
    .chain((c) =>
      fc.constantFrom(
        c,
        c,
        c.toLowerCase(),
        c.toUpperCase(),
        c.normalize('NFD'),
        ` ${c}`,
        `${c} `,
        c.slice(0, -1),
        c.replaceAll(' ', '_'),
      ),
    );
  const odd = fc.constantFrom('', ' ', '\u00a0', '%', '_', 'null', 'x\u0001', '\uFEFF', 'a'.repeat(65), '😀');
  const integer = fc.oneof(
    fc.integer({ min: 1, max: 12 }).map(String),
    fc.constantFrom('0', '-1', '', '01', '1e2', '1.0', '+5', ' 5', '٣', '50', '999', '1000', '1001'),
    fc.constantFrom('10000', '10001', '1000000000', '1000000001', '99999999999999'),
  );
  const pair = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom('destination', 'status'), fc.oneof(code, code, odd)) },
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom('pageSize', 'page'), integer) },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom('Status', 'PAGE', 'pagesize', 'foo', 'destination[]', ''), code),
    },
  );
  return fc
    .array(pair, { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'));
}

/** Runs the property over `endpoint?query`; `exportsEqual`: compare the 200 bodies of CSV and NDJSON too. */
async function checkParity(s: SyncedReader, codes: string[], exportsEqual: boolean, numRuns: number) {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...ENDPOINTS), queryArbitrary(codes), async (endpoint, q) => {
      const path = `${endpoint}${q === '' ? '' : `?${q}`}`;
      const simulator = await ask(s.simulator.api(path));
      const reader = await ask(s.reader.api(path));
      const isExport = endpoint === '/reports.csv' || endpoint === '/reports.ndjson';
      if (isExport && simulator.status === 200 && !exportsEqual) {
        expect({ ...reader, body: '' }, path).toEqual({ ...simulator, body: '' });
      } else {
        expect(reader, path).toEqual(simulator);
      }
    }),
    { numRuns },
  );
}

async function codesOf(s: SyncedReader): Promise<string[]> {
  const stats = (await (await fetch(s.simulator.api('/reports/stats'))).json()) as {
    byStatus: Record<string, number>;
    byDestination: Record<string, number>;
  };
  return [...Object.keys(stats.byStatus), ...Object.keys(stats.byDestination)];
}

describe('parity property on the real sample', () => {
  let s: SyncedReader;
  beforeAll(async () => {
    s = await startSyncedReader({ dataset: await loadDataset(sampleDatasetPath()) });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers every generated query as the simulator does', async () => {
    await checkParity(s, await codesOf(s), false, 150);
  });
});

/** A capture's requests in the report shape, with the city's own values and unknown fields kept. */
function open311Lines(file: string, destinationKey: string): string[] {
  const requests = JSON.parse(readFileSync(join(REAL, file), 'utf8')) as Array<Record<string, unknown>>;
  return requests.map((r) => {
    const {
      service_request_id: id,
      status,
      service_name: category,
      description = null,
      lat,
      long: lng,
      address,
      requested_datetime: createdAt,
      updated_datetime: updatedAt,
      ...rest
    } = r;
    const location = lat === null || lat === undefined ? null : { lat, lng };
    const destination = r[destinationKey];
    const wire = { id, status, destination, category, description, location, address, createdAt, updatedAt };
    return JSON.stringify({ ...wire, ...rest });
  });
}

/** `createdAt` as a UTC instant, then `id`: a sort key of a report line. */
function creationKey(line: string): string {
  const r = JSON.parse(line) as { id: string; createdAt: string };
  return `${new Date(r.createdAt).toISOString()} ${r.id}`;
}

describe('parity property on the Köln and Chicago Open311 captures, after two simulated days', () => {
  let s: SyncedReader;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    tmp = tempDir('reports-sync-parity-property-');
    const file = join(tmp.dir, 'open311.ndjson');
    // In creation order, as the sample is: the reader exports in creation order, the simulator in file
    // order (the captures list newest first), so only a file in creation order can give equal exports.
    const lines = [
      ...open311Lines('koeln_sagsuns_open311_requests_2016-02.json', 'service_name'),
      ...open311Lines('chicago_open311_requests_with_notes_2014.json', 'agency_responsible'),
    ]
      .map((line) => ({ line, key: creationKey(line) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map((r) => r.line);
    writeFileSync(file, `${lines.join('\n')}\n`);
    s = await startSyncedReader({ dataset: await loadDataset(file, { seed: 3 }) });
    s.simulator.dataset.advanceDays(2);
    // As `sync --source ndjson` runs it: the export, then the tombstones of the reports it no longer holds.
    const [again] = await syncTargetOnce(s.warehouse, s.config, 'ndjson');
    expect(again?.status).toBe('succeeded');
    expect(again?.counters).toMatchObject({ recordsRejected: 0, inserted: 4, removed: 2 });
  });
  afterAll(async () => {
    await s?.close();
    tmp?.cleanup();
  });

  it('answers every generated query as the simulator does, exports byte for byte', async () => {
    const codes = await codesOf(s);
    expect(codes).toEqual(expect.arrayContaining(['open', 'closed', 'Straßenlaterne defekt']));
    await checkParity(s, codes, true, 150);
  });
});
