import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';
import { query, tempDir } from '../helpers/sync.js';

/**
 * Real clients read what the reader serves: GDAL's `ogrinfo` (gdal-bin) over HTTP for the GeoJSON,
 * csvkit for the CSV, and DuckDB's own `read_csv`. `.ci/run` installs gdal-bin and csvkit from Debian;
 * where a tool is missing, its test is skipped and says which package to install.
 */

function has(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).status === 0;
}

/**
 * Runs a client asynchronously: the reader answers from this very process, so a synchronous spawn would
 * block the server the client is talking to.
 */
function run(tool: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(tool, args, { encoding: 'utf8', timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${tool} ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve(`${stdout}${stderr}`);
    });
  });
}

const OGRINFO = has('ogrinfo');
const CSVKIT = has('csvclean') && has('csvstat');
const skipNote = (ok: boolean, pkg: string) =>
  ok ? '' : ` — SKIPPED: not installed (apt-get install ${pkg})`;
if (!OGRINFO) console.warn('real-clients: ogrinfo not found, its test is skipped (apt-get install gdal-bin)');
if (!CSVKIT) console.warn('real-clients: csvkit not found, its test is skipped (apt-get install csvkit)');

describe('real clients read the reader', () => {
  let s: SyncedReader;
  let tmp: ReturnType<typeof tempDir>;
  let csvFile: string;

  beforeAll(async () => {
    s = await startSyncedReader({ dataset: await loadDataset(sampleDatasetPath()) });
    tmp = tempDir();
    csvFile = join(tmp.dir, 'reports.csv');
    // One page holds the whole sample (6,405 reports; the maximum page is 10,000 rows).
    writeFileSync(csvFile, await (await fetch(s.reader.api('/reports.csv?pageSize=10000'))).text());
  });
  afterAll(async () => {
    await s?.close();
    tmp?.cleanup();
  });

  it.skipIf(!OGRINFO)(
    `ogrinfo opens the GeoJSON URL and counts one feature per located report, [lng, lat]${skipNote(OGRINFO, 'gdal-bin')}`,
    async () => {
      for (const filter of ['', '?destination=ROAD_CONTROL&status=SUBMITTED']) {
        const [row] = await query(
          s.warehouse,
          `SELECT count(*) AS n FROM reports WHERE removed_at IS NULL AND lat IS NOT NULL
             AND ($d IS NULL OR destination = $d) AND ($s IS NULL OR status = $s)`,
          filter ? { d: 'ROAD_CONTROL', s: 'SUBMITTED' } : { d: null, s: null },
        );
        const out = await run('ogrinfo', ['-ro', '-so', '-al', s.reader.api(`/reports.geojson${filter}`)]);
        expect(out).toContain("using driver `GeoJSON' successful");
        expect(out).toContain('Geometry: Point');
        expect(out).toMatch(new RegExp(`Feature Count: ${row?.n}\\b`));
        // Extent (minX, minY) - (maxX, maxY): X is longitude (New York, San Francisco are west, so negative).
        const extent = /Extent: \((-?[\d.]+), (-?[\d.]+)\) - \((-?[\d.]+), (-?[\d.]+)\)/.exec(out);
        const [minX, minY, maxX, maxY] = (extent ?? []).slice(1).map(Number);
        expect(minX).toBeLessThan(-70);
        expect([minY, maxY].every((y) => (y as number) > 30 && (y as number) < 60)).toBe(true);
        expect(maxX).toBeLessThanOrEqual(180);
      }
    },
  );

  it.skipIf(!CSVKIT)(
    `csvkit finds the CSV well-formed (RFC 4180) with one row per current report${skipNote(CSVKIT, 'csvkit')}`,
    async () => {
      const [row] = await query(s.warehouse, 'SELECT count(*) AS n FROM reports WHERE removed_at IS NULL');
      expect((await run('csvstat', ['--count', csvFile])).trim()).toBe(String(row?.n));
      // csvclean -n reports ragged rows; quoted line breaks inside a field are no error.
      expect(await run('csvclean', ['-n', csvFile])).not.toMatch(/Expected \d+ columns/);
    },
  );

  it("DuckDB's read_csv of the reader's CSV gives back the rows of the reports table", async () => {
    const fromCsv = `SELECT id, status, destination, category, description, lat::DOUBLE AS lat, lng::DOUBLE AS lng,
        address, "createdAt"::TIMESTAMPTZ AS created_at, "updatedAt"::TIMESTAMPTZ AS updated_at,
        agency, borough, "authorityNote" AS note, "historyEvents" AS events
      FROM read_csv('${csvFile.replace(/'/g, "''")}', header = true, all_varchar = true)`;
    const fromTable = `SELECT id, status, destination, category, description, lat, lng, address, created_at,
        updated_at, extra->>'agency', extra->>'borough', extra->>'authorityNote', extra->>'historyEvents'
      FROM reports WHERE removed_at IS NULL`;
    const [counts] = await query(
      s.warehouse,
      `SELECT (SELECT count(*) FROM (${fromCsv})) AS csv, (SELECT count(*) FROM (${fromTable})) AS tbl,
              (SELECT count(*) FROM ((${fromCsv}) EXCEPT ALL (${fromTable}))) AS only_csv,
              (SELECT count(*) FROM ((${fromTable}) EXCEPT ALL (${fromCsv}))) AS only_table,
              (SELECT count(*) FROM (${fromCsv}) WHERE events IS NOT NULL) AS with_events`,
    );
    expect(counts?.csv).toBe(6405);
    expect(counts).toEqual({
      csv: counts?.tbl,
      tbl: counts?.csv,
      only_csv: 0,
      only_table: 0,
      with_events: 50,
    });
  });
});
