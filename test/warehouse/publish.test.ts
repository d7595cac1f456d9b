import { existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { publishSnapshot, publishedDirFor } from '../../src/warehouse/publish.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

describe('publishSnapshot', () => {
  let tmp: ReturnType<typeof tempDir>;
  let warehouse: Warehouse;

  beforeEach(async () => {
    tmp = tempDir();
    const sim = await startTestSimulator({ generate: { n: 500, seed: 3 } });
    const config = testConfig(sim.url, join(tmp.dir, 'warehouse.duckdb'));
    warehouse = await openTestWarehouse(config);
    expect((await syncOnce(warehouse, config, ndjsonSource)).status).toBe('succeeded');
  });
  afterEach(() => {
    warehouse.close();
    tmp.cleanup();
  });

  it('writes a DuckDB copy that another instance opens read-only while the live file stays open', async () => {
    const result = await publishSnapshot(warehouse);
    expect(result.databasePath).toBe(join(tmp.dir, 'published', 'warehouse.duckdb'));
    const reportsRows = result.tables.find((t) => t.name === 'report_rows')?.rows;
    expect(reportsRows).toBe(500);

    const copy = await DuckDBInstance.create(result.databasePath, { access_mode: 'READ_ONLY' });
    try {
      const c = await copy.connect();
      const live = await query(warehouse, 'SELECT id, status FROM reports ORDER BY id');
      const published = (await c.runAndReadAll('SELECT id, status FROM reports ORDER BY id'))
        .getRowObjectsJS()
        .map((r) => ({ ...r }));
      expect(published).toEqual(live);
      // What analysts query: the views, without the sync's internal columns and working tables.
      const current = (
        await c.runAndReadAll('SELECT count(*)::INTEGER AS n FROM current_reports')
      ).getRowObjectsJS();
      expect(current).toEqual([{ n: 500 }]);
      const history = (
        await c.runAndReadAll('SELECT count(*)::INTEGER AS n FROM report_history WHERE is_current')
      ).getRowObjectsJS();
      expect(history).toEqual([{ n: 500 }]);
      const columns = (
        await c.runAndReadAll(
          `SELECT table_name || '.' || column_name AS c FROM duckdb_columns() WHERE column_name IN ('content_hash', 'line_hash')`,
        )
      ).getRowObjectsJS();
      expect(columns).toEqual([]);
      const tables = (await c.runAndReadAll(`SELECT table_name FROM duckdb_tables()`)).getRowObjectsJS();
      expect(tables.map((t) => String(t.table_name)).filter((t) => t.startsWith('staging_'))).toEqual([]);
      const runs = (await c.runAndReadAll(`SELECT status FROM sync_runs`)).getRowObjectsJS();
      expect(runs).toEqual([{ status: 'succeeded' }]);
      await expect(c.run('DELETE FROM report_rows')).rejects.toThrow(/read-only/i);
      c.closeSync();
    } finally {
      copy.closeSync();
    }
    // No temp file or WAL is left next to it.
    expect(
      readdirSync(publishedDirFor(warehouse.path)).filter((f) => f.startsWith('.') || f.endsWith('.wal')),
    ).toEqual([]);
  });

  it('writes Parquet per table, reports partitioned Hive-style by destination', async () => {
    const result = await publishSnapshot(warehouse);
    const parquet = result.parquetPath;
    const files = readdirSync(parquet).sort();
    expect(files).toEqual(
      expect.arrayContaining([
        'report_versions.parquet',
        'reports',
        'sync_runs.parquet',
        'rejected_records.parquet',
      ]),
    );
    expect(files).not.toContain('staging_reports.parquet');
    expect(files).not.toContain('staging_seen.parquet');
    const parquetColumns = await query(
      warehouse,
      `SELECT name FROM parquet_schema('${join(parquet, '*.parquet')}') UNION ALL
       SELECT name FROM parquet_schema('${join(parquet, 'reports', '**', '*.parquet')}')`,
    );
    const names = parquetColumns.map((r) => r.name);
    expect(names).toContain('status');
    expect(names).not.toContain('content_hash');
    expect(names).not.toContain('line_hash');
    // Every version, the current ones (rows of reports) included.
    const versionCounts = await query(
      warehouse,
      `SELECT (SELECT count(*) FROM read_parquet('${join(parquet, 'report_versions.parquet')}')) AS parquet,
         (SELECT count(*) FROM report_versions) AS live`,
    );
    expect(versionCounts[0]?.parquet).toBe(versionCounts[0]?.live);
    expect(Number(versionCounts[0]?.live)).toBeGreaterThanOrEqual(500);
    const partitions = readdirSync(join(parquet, 'reports'));
    expect(partitions.every((p) => /^destination=[A-Z_]+$/.test(p))).toBe(true);
    const glob = join(parquet, 'reports', '**', '*.parquet');
    const fromParquet = await query(
      warehouse,
      `SELECT destination, count(*) AS n FROM read_parquet('${glob}', hive_partitioning = true) GROUP BY ALL ORDER BY ALL`,
    );
    const fromTable = await query(
      warehouse,
      'SELECT destination, count(*) AS n FROM reports GROUP BY ALL ORDER BY ALL',
    );
    expect(fromParquet).toEqual(fromTable);
    expect(partitions).toHaveLength(fromTable.length);
  });

  it('swaps the parquet link to a new version, keeps the previous one, and clears a dead publish', async () => {
    const dir = publishedDirFor(warehouse.path);
    const first = await publishSnapshot(warehouse);
    const firstVersion = readlinkSync(first.parquetPath);
    // A publish that died: temp files left behind.
    writeFileSync(join(dir, '.warehouse.duckdb.tmp-1-x'), 'half a file');
    mkdirSync(join(dir, '.parquet.tmp-1-x'));
    await new Promise((r) => setTimeout(r, 5)); // a new version stamp (ms resolution)
    const second = await publishSnapshot(warehouse);
    const secondVersion = readlinkSync(second.parquetPath);
    expect(secondVersion).not.toBe(firstVersion);
    expect(lstatSync(second.parquetPath).isSymbolicLink()).toBe(true);
    await new Promise((r) => setTimeout(r, 5));
    await publishSnapshot(warehouse);
    const entries = readdirSync(dir).sort();
    expect(entries.filter((e) => e.startsWith('parquet-'))).toHaveLength(2); // current + previous
    expect(existsSync(join(dir, firstVersion))).toBe(false);
    expect(existsSync(join(dir, secondVersion))).toBe(true);
    expect(entries.filter((e) => e.startsWith('.'))).toEqual([]);
  });

  it('fails with PUBLISH_FAILED naming the folder when it cannot write there', async () => {
    const blocked = join(tmp.dir, 'not-a-folder');
    writeFileSync(blocked, 'a file where the published folder should be');
    await expect(publishSnapshot(warehouse, blocked)).rejects.toMatchObject({
      code: 'PUBLISH_FAILED',
      message: expect.stringContaining(blocked),
    });
  });
});
