import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/warehouse/migrate.js';
import { startRawServer } from '../helpers/raw-server.js';
import { csvExport, reportJson, type ModelReport } from '../helpers/writer-model.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const base = {
  status: 'SUBMITTED',
  location: null,
  createdAt: '2024-03-01T10:00:00+00:00',
  updatedAt: null,
};
const REPORTS: ModelReport[] = [
  {
    ...base,
    id: 'a',
    category: '',
    description: 'x\r\ny',
    extras: [
      ['n', { float: 1 }],
      ['ok', true],
    ],
  },
  {
    ...base,
    id: 'b',
    category: 'c',
    description: null,
    extras: [
      [
        'meta',
        {
          obj: [
            ['z', null],
            ['a', ''],
          ],
        },
      ],
    ],
  },
  { ...base, id: 'c', category: 'c', description: 'plain', extras: [['note', 'text']] },
  { ...base, id: 'd', category: 'c', description: 'plain', extras: [] },
];
const JSON_STYLE = { spaced: true, sortKeys: false, asciiOnly: true, floats: 'python' as const };
const CSV_STYLE = {
  quoting: 'minimal' as const,
  lineEnd: '\r\n' as const,
  booleans: 'True' as const,
  floats: 'js' as const,
  json: { ...JSON_STYLE, sortKeys: true },
  spaceInTimestamps: false,
  sortColumns: true,
};

describe('the CSV projection by value (migration 014)', () => {
  it('computes every stored projection hash again, so a warehouse upgraded to it makes no version of them', async () => {
    const up = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return void res.end('{"total":4}');
      if (url.pathname.endsWith('.csv')) {
        return void res.end(csvExport(url.searchParams.get('page') === '1' ? REPORTS : [], CSV_STYLE));
      }
      res.end(REPORTS.map((r) => `${reportJson(r, JSON_STYLE)}\n`).join(''));
    });
    const config = testConfig(up.url, join(tmp.dir, 'w.duckdb'), { conditionalExports: false });
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      const hashes = await query(warehouse, 'SELECT id, csv_hash FROM reports ORDER BY id');
      expect(hashes.filter((h) => h.csv_hash !== null).map((h) => h.id)).toEqual(['a', 'b']);
      // As stored under an earlier rule: other hashes (and NULL where the report was its own projection).
      const c = await warehouse.connect();
      try {
        // A staged row of an interrupted run (a resumed one merges it) is brought up to date too.
        await c.run(`INSERT INTO staging_reports (run_id, seq, id, status, destination, category, description,
            lat, lng, address, created_at, updated_at, extra, content_hash, csv_hash)
          SELECT 'interrupted', 7, id, status, destination, category, description, lat, lng, address,
            created_at, updated_at, extra, content_hash, 'stale' FROM reports WHERE id = 'b';
          UPDATE report_rows SET csv_hash = CASE id WHEN 'a' THEN 'stale' WHEN 'c' THEN 'stale' END;
          DELETE FROM schema_migrations WHERE version = 14`);
        expect(await migrate(c)).toEqual([14]);
      } finally {
        c.closeSync();
      }
      expect(await query(warehouse, 'SELECT id, csv_hash FROM reports ORDER BY id')).toEqual(hashes);
      expect(await query(warehouse, 'SELECT id, csv_hash FROM staging_reports')).toEqual([hashes[1]]);
      await query(warehouse, 'DELETE FROM staging_reports');
      const [run] = await syncTargetOnce(warehouse, config, 'csv');
      expect(run?.counters).toMatchObject({ updated: 0, unchanged: 4 });
      expect(await query(warehouse, 'SELECT count(*) AS n FROM report_versions')).toEqual([{ n: 4 }]);
    } finally {
      warehouse.close();
      await up.close();
    }
  });
});
