import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startSimulator } from '../../src/simulator/server.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { startRawServer } from '../helpers/raw-server.js';
import { startTestSimulator } from '../helpers/simulator.js';
import {
  capturingLogger,
  openTestWarehouse,
  query,
  syncTargetOnce,
  tempDir,
  testConfig,
} from '../helpers/sync.js';

const BUSINESS =
  'id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra, content_hash';

/** The small fixture holds 4 warts in 14 lines: over the default 5% reject limit. */
const SMALL = { maxRejectRatio: 1 };

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('CSV sync', () => {
  it('loads the real sample into exactly the rows the NDJSON sync loads (EXCEPT both ways)', async () => {
    const sim = await startSimulator({ dataset: await loadDataset(sampleDatasetPath()) });
    try {
      const ndjsonPath = join(tmp.dir, 'ndjson.duckdb');
      const csvPath = join(tmp.dir, 'csv.duckdb');
      const w1 = await openTestWarehouse(testConfig(sim.url, ndjsonPath));
      const [nd] = await syncTargetOnce(w1, testConfig(sim.url, ndjsonPath), 'ndjson');
      w1.close();
      const w2 = await openTestWarehouse(testConfig(sim.url, csvPath));
      const [csv] = await syncTargetOnce(w2, testConfig(sim.url, csvPath, { csvPageSize: 500 }), 'csv');
      w2.close();
      expect(nd?.status).toBe('succeeded');
      expect(csv?.status).toBe('succeeded');
      // Same records seen, loaded and quarantined; 6,411 lines make 13 pages of 500.
      expect(csv?.counters).toMatchObject({
        recordsRead: nd?.counters.recordsRead,
        recordsLoaded: nd?.counters.recordsLoaded,
        recordsRejected: nd?.counters.recordsRejected,
        inserted: nd?.counters.inserted,
        pages: 13,
      });

      const both = await openWarehouse(ndjsonPath);
      const c = await both.connect();
      try {
        await c.run(`ATTACH '${csvPath}' AS csv (READ_ONLY)`);
        const onlyNdjson = await query(
          c,
          `SELECT ${BUSINESS} FROM reports EXCEPT SELECT ${BUSINESS} FROM csv.reports`,
        );
        const onlyCsv = await query(
          c,
          `SELECT ${BUSINESS} FROM csv.reports EXCEPT SELECT ${BUSINESS} FROM reports`,
        );
        expect(onlyNdjson).toEqual([]);
        expect(onlyCsv).toEqual([]);
        const [counts] = await query(
          c,
          `SELECT (SELECT count(*) FROM reports) AS nd, (SELECT count(*) FROM csv.reports) AS csv,
                  (SELECT count(*) FROM reports WHERE extra IS NOT NULL) AS with_extra`,
        );
        expect(counts?.nd).toBe(counts?.csv);
        expect(counts?.nd).toBeGreaterThan(6000);
        expect(counts?.with_extra).toBe(counts?.nd);
        // Both quarantined the same upstream records (CSV locations name page, row and line).
        const rejects = await query(
          c,
          `SELECT (SELECT list(record_id ORDER BY record_id) FROM rejected_records) AS nd,
                  (SELECT list(record_id ORDER BY record_id) FROM csv.rejected_records) AS csv,
                  (SELECT bool_and(location LIKE 'page %, row %, line %') FROM csv.rejected_records) AS located`,
        );
        expect({ csv: rejects[0]?.csv }).toEqual({ csv: rejects[0]?.nd });
        expect(rejects[0]?.located).toBe(true);
      } finally {
        c.closeSync();
        both.close();
      }
    } finally {
      await sim.close();
    }
  });

  it('follows the redirect chain to another origin without sending it the API key', async () => {
    const other = await startTestSimulator();
    const sim = await startTestSimulator({ faults: [`csv:redirect=crossOrigin,to=${other.url}`] });
    const path = join(tmp.dir, 'w.duckdb');
    const config = testConfig(sim.url, path, { ...SMALL, csvPageSize: 5, apiKey: 'k-secret-123' });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'csv');
      expect(run?.status).toBe('succeeded');
      expect(run?.counters).toMatchObject({ recordsRead: 14, pages: 3 });
      // Upstream → other /reports.csv → other's export location, then Link rel="next" on the other origin.
      // The upstream itself got page 1's request (then redirected it) and the /stats request, with the key.
      expect(sim.requests().map((r) => r.path)).toEqual([
        '/api/v1/public/reports.csv?pageSize=5&page=1',
        '/api/v1/public/reports/stats',
      ]);
      for (const r of sim.requests()) expect(r.headers['x-api-key'], r.path).toBe('k-secret-123');
      expect(other.requests().map((r) => r.path)).toEqual([
        '/api/v1/public/reports.csv?pageSize=5&page=1',
        '/api/v1/public/exports/reports.csv?pageSize=5&page=1',
        '/api/v1/public/exports/reports.csv?pageSize=5&page=2',
        '/api/v1/public/exports/reports.csv?pageSize=5&page=3',
      ]);
      for (const r of other.requests()) expect(r.headers['x-api-key'], r.path).toBeUndefined();
      const [stored] = await query(
        warehouse,
        `SELECT count(*) AS n FROM sync_runs WHERE (upstream_url || coalesce(error::VARCHAR, '')) LIKE '%k-secret%'`,
      );
      expect(stored?.n).toBe(0);

      // The redirect bound: one hop allowed, two needed.
      const strict = testConfig(sim.url, path, { ...SMALL, csvPageSize: 5, maxRedirects: 1, retries: 0 });
      const [failed] = await syncTargetOnce(warehouse, strict, 'csv');
      expect(failed?.status).toBe('failed');
      expect(failed?.error?.code).toBe('REDIRECT_LIMIT');
      expect(failed?.error?.message).toContain(`${sim.url}/api/v1/public/reports.csv?pageSize=5&page=1`);
    } finally {
      warehouse.close();
    }
  });

  it('stops with a warning when the server ignores `page`, keeps what it read and removes nothing', async () => {
    const sim = await startTestSimulator();
    const path = join(tmp.dir, 'w.duckdb');
    const warehouse = await openTestWarehouse(testConfig(sim.url, path));
    try {
      const [first] = await syncTargetOnce(warehouse, testConfig(sim.url, path, SMALL), 'ndjson');
      expect(first?.counters.inserted).toBe(10);
      sim.setFaults(['csv:ignorePage']);
      const { logger, lines } = await capturingLogger();
      const [run] = await syncTargetOnce(
        warehouse,
        testConfig(sim.url, path, { ...SMALL, csvPageSize: 5 }),
        'csv',
        logger,
      );
      expect(run?.status).toBe('succeeded');
      // Page 2 repeated page 1's keys: only page 1 (5 rows: 4 reports and a wart) was read.
      expect(run?.counters).toMatchObject({ recordsRead: 5, recordsLoaded: 4, pages: 1, removed: 0 });
      expect(
        lines.some((l) => l.level === 40 && String(l.msg).includes('ignores the `page` parameter')),
      ).toBe(true);
      const [row] = await query(
        warehouse,
        `SELECT complete, removed, tombstones_note FROM sync_runs WHERE run_id = $run`,
        { run: run?.runId ?? '' },
      );
      expect(row?.complete).toBe(false);
      expect(row?.removed).toBe(0);
      expect(String(row?.tombstones_note)).toMatch(
        /^no tombstones: the export is incomplete \(page 2 repeats/,
      );
      const [current] = await query(warehouse, 'SELECT count(*) AS n FROM reports WHERE removed_at IS NULL');
      expect(current?.n).toBe(10);
    } finally {
      warehouse.close();
    }
  });

  it('quarantines broken quotes and ragged rows with page, row and line, and loads every other row', async () => {
    // Pages of 5: [A1 A2 A3 (no id) A4] [A5 W-LAT A6 W-DATE A7] [broken A8 A9 A10]; row 1 of each page gets
    // an unclosed quote, row 4 loses a cell.
    const sim = await startTestSimulator({
      faults: ['csv:csvWart=unclosedQuote,at=1', 'csv:csvWart=raggedRow,at=4'],
    });
    const path = join(tmp.dir, 'w.duckdb');
    const config = testConfig(sim.url, path, { ...SMALL, csvPageSize: 5 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'csv');
      expect(run?.status).toBe('succeeded');
      const ids = await query(warehouse, 'SELECT id FROM reports ORDER BY id');
      expect(ids.map((r) => r.id)).toEqual(['A1', 'A10', 'A3', 'A5', 'A6', 'A9']);
      const c = run?.counters;
      expect((c?.recordsLoaded ?? 0) + (c?.recordsRejected ?? 0)).toBe(c?.recordsRead);
      const rejects = await query(
        warehouse,
        'SELECT page, "row", line, raw, issues FROM rejected_records WHERE run_id = $run ORDER BY page, "row"',
        { run: run?.runId ?? '' },
      );
      expect(rejects.length).toBe(c?.recordsRejected);
      // A2's opening quote never closes: its first line is quarantined, reading goes on at the next line.
      const a2 = rejects.find((r) => String(r.raw).startsWith('A2,'));
      expect(a2).toMatchObject({ page: 1, row: 2, line: 3 });
      expect(String(a2?.issues)).toContain('malformed CSV');
      const a4 = rejects.find((r) => String(r.raw).startsWith('A4,'));
      expect(String(a4?.issues)).toContain('ragged row');
      for (const r of rejects) expect(r.line, String(r.raw)).toBeGreaterThan(1);
    } finally {
      warehouse.close();
    }
  });

  it.each([
    ['a Socrata pair', (lat: number, lng: number) => `"(${lat}, ${lng})"`],
    ['WKT', (lat: number, lng: number) => `POINT (${lng} ${lat})`],
    ['GeoJSON', (lat: number, lng: number) => `"{""type"":""Point"",""coordinates"":[${lng},${lat}]}"`],
  ])(
    'reads a location column written as %s beside lat and lng: the same reports as without it',
    async (_, cell) => {
      const rows = Array.from({ length: 12 }, (_, i) => ({
        id: `G-${i}`,
        lat: 52 + i / 100,
        lng: 13 - i / 100,
      }));
      const csv = (withLocation: boolean) =>
        `id,status,destination,createdAt,lat,lng${withLocation ? ',location' : ''}\r\n` +
        rows
          .map(
            (r) =>
              `${r.id},SUBMITTED,ROAD_CONTROL,2024-01-01T00:00:00Z,${r.lat},${r.lng}` +
              `${withLocation ? `,${cell(r.lat, r.lng)}` : ''}\r\n`,
          )
          .join('');
      const hashes: unknown[] = [];
      for (const withLocation of [true, false]) {
        const server = await startRawServer((req, res) => {
          const url = new URL(req.url ?? '/', 'http://x');
          if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: rows.length }));
          res.writeHead(200, { 'content-type': 'text/csv' });
          res.end(
            url.searchParams.get('page') === '1' ? csv(withLocation) : csv(withLocation).split('\r\n')[0],
          );
        });
        const config = testConfig(server.url, join(tmp.dir, `w-${withLocation}.duckdb`), {
          csvPageSize: 100,
        });
        const warehouse = await openTestWarehouse(config);
        try {
          const [run] = await syncTargetOnce(warehouse, config, 'csv');
          expect(run?.status, run?.error?.message).toBe('succeeded');
          expect(run?.counters).toMatchObject({ recordsLoaded: 12, recordsRejected: 0 });
          hashes.push(
            await query(warehouse, `SELECT id, lat, lng, extra, content_hash FROM reports ORDER BY id`),
          );
        } finally {
          warehouse.close();
          await server.close();
        }
      }
      expect(hashes[0]).toEqual(hashes[1]);
    },
  );

  it('reads a header in another style (ID, STATUS, created_at, Updated At): the same reports as the wire names', async () => {
    const rows = Array.from({ length: 8 }, (_, i) => [
      `H-${i}`,
      'SUBMITTED',
      'ROAD_CONTROL',
      '2024-01-01T00:00:00Z',
      `2024-01-0${i + 2}T00:00:00Z`,
      `w${i}`,
    ]);
    const reports: unknown[] = [];
    for (const header of [
      'id,status,destination,createdAt,updatedAt,Ward',
      'ID,STATUS,Destination,created_at,Updated At,Ward',
    ]) {
      const csv = `${header}\r\n${rows.map((r) => r.join(',')).join('\r\n')}\r\n`;
      const server = await startRawServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: rows.length }));
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.end(url.searchParams.get('page') === '1' ? csv : `${header}\r\n`);
      });
      const config = testConfig(server.url, join(tmp.dir, `w-${reports.length}.duckdb`), {
        csvPageSize: 100,
      });
      const warehouse = await openTestWarehouse(config);
      try {
        const [run] = await syncTargetOnce(warehouse, config, 'csv');
        expect(run?.status, run?.error?.message).toBe('succeeded');
        expect(run?.counters).toMatchObject({ recordsLoaded: 8, recordsRejected: 0 });
        reports.push(
          await query(warehouse, `SELECT id, updated_at, extra, content_hash FROM reports ORDER BY id`),
        );
      } finally {
        warehouse.close();
        await server.close();
      }
    }
    expect(reports[1]).toEqual(reports[0]);
  });

  it('tolerates a BOM, a row ended by LF alone and blank lines without losing a row', async () => {
    const sim = await startTestSimulator({
      faults: ['csv:csvWart=bom', 'csv:csvWart=mixedNewlines,at=0', 'csv:csvWart=blankLines,at=2'],
    });
    const path = join(tmp.dir, 'w.duckdb');
    const config = testConfig(sim.url, path, { ...SMALL, csvPageSize: 5 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'csv');
      expect(run?.status).toBe('succeeded');
      expect(run?.counters).toMatchObject({ recordsRead: 14, recordsLoaded: 10, recordsRejected: 4 });
      const [a2] = await query(warehouse, "SELECT description FROM reports WHERE id = 'A2'");
      expect(a2?.description).toBe('Zeile eins\r\nZeile zwei, mit Komma und "Anführungszeichen"');
    } finally {
      warehouse.close();
    }
  });

  it('retries a failed or cut page alone, and restarts from page 1 when the export changes under it', async () => {
    const sim = await startTestSimulator({ faults: ['csv:status=503,times=1', 'csv:cut=200,times=1'] });
    const path = join(tmp.dir, 'w.duckdb');
    const config = testConfig(sim.url, path, { ...SMALL, csvPageSize: 5, retries: 2 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'csv');
      expect(run?.status).toBe('succeeded');
      expect(run?.attempts).toBe(1);
      expect(run?.counters).toMatchObject({ recordsRead: 14, recordsLoaded: 10, pages: 3 });
      const pages = sim.requests().filter((r) => r.path.includes('/exports/'));
      // Page 1 alone is fetched again; pages 2 and 3 once each (they may be fetched ahead of page 1's retry:
      // its Link is known once its cut body is in). Sorted by page, stable: each page's requests in order.
      const byPage = pages
        .map((r) => [r.path.slice(-6), r.status] as const)
        .sort((a, b) => a[0].localeCompare(b[0]));
      expect(byPage).toEqual([
        ['page=1', 503],
        ['page=1', 200],
        ['page=1', 200],
        ['page=2', 200],
        ['page=3', 200],
      ]);

      // Every request sees a new export version. Read again from page 1 once; changed again, the validator
      // names no version that lasts a read: the pages are read on and merged, and no delete is inferred.
      sim.setFaults(['csv:regenerate']);
      const [changed] = await syncTargetOnce(warehouse, { ...config, retries: 1 }, 'csv');
      expect([changed?.status, changed?.attempts, changed?.counters.removed]).toEqual(['succeeded', 2, 0]);
      const [log] = await query(
        warehouse,
        `SELECT tombstones_note, export_etag FROM sync_runs ORDER BY started_at DESC LIMIT 1`,
      );
      expect(log).toMatchObject({
        export_etag: null,
        tombstones_note: expect.stringContaining('changed again'),
      });
      expect(
        await query(warehouse, `SELECT count(*)::INTEGER AS n FROM reports WHERE removed_at IS NULL`),
      ).toEqual([{ n: 10 }]);
    } finally {
      warehouse.close();
    }
  });

  it('fails past REPORTS_CSV_MAX_PAGES instead of paging forever', async () => {
    const sim = await startTestSimulator();
    const path = join(tmp.dir, 'w.duckdb');
    const config = testConfig(sim.url, path, { ...SMALL, csvPageSize: 5, csvMaxPages: 2 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'csv');
      expect(run?.status).toBe('failed');
      expect(run?.error?.code).toBe('CSV_MAX_PAGES');
      expect(run?.error?.message).toContain('still has rows on page 3, past REPORTS_CSV_MAX_PAGES=2');
      const [n] = await query(warehouse, 'SELECT count(*) AS n FROM reports');
      expect(n?.n).toBe(0);
      // Exactly as many pages as allowed is fine.
      const [exact] = await syncTargetOnce(warehouse, { ...config, csvMaxPages: 3 }, 'csv');
      expect(exact?.status).toBe('succeeded');
    } finally {
      warehouse.close();
    }
  });
});
