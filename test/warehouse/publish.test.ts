import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { spawn } from 'node:child_process';
import { basename, dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SimulatorHandle } from '../../src/simulator/server.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { keyRange } from '../../src/warehouse/parquet-layout.js';
import { publishSnapshot, publishedDirFor } from '../../src/warehouse/publish.js';
import { readManifest } from '../../src/warehouse/publish-parquet.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { expectSameAsFullPublish } from '../helpers/published.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncOnce, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

describe('publishSnapshot', () => {
  let tmp: ReturnType<typeof tempDir>;
  let warehouse: Warehouse;
  let sim: SimulatorHandle;
  let config: ReturnType<typeof testConfig>;

  beforeEach(async () => {
    tmp = tempDir();
    sim = await startTestSimulator({ generate: { n: 500, seed: 3 } });
    config = testConfig(sim.url, join(tmp.dir, 'warehouse.duckdb'));
    warehouse = await openTestWarehouse(config);
    expect((await syncOnce(warehouse, config, ndjsonSource)).status).toBe('succeeded');
  });
  afterEach(() => {
    warehouse.close();
    tmp.cleanup();
  });

  /** A simulated day (status moves, new and unpublished reports) synced: a change to publish. */
  async function nextDay(): Promise<void> {
    sim.advanceDays(1);
    expect((await syncOnce(warehouse, config, ndjsonSource)).status).toBe('succeeded');
  }

  it('writes a DuckDB copy that another instance opens read-only while the live file stays open', async () => {
    const result = await publishSnapshot(warehouse);
    expect(result.databasePath).toBe(join(tmp.dir, 'published', 'warehouse.duckdb'));
    expect(result.tables.find((t) => t.name === 'report_rows')?.rows).toBe(500);

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
          `SELECT table_name || '.' || column_name AS c FROM duckdb_columns()
           WHERE column_name IN ('content_hash', 'line_hash', 'csv_hash')`,
        )
      ).getRowObjectsJS();
      expect(columns).toEqual([]);
      const tables = (await c.runAndReadAll(`SELECT table_name FROM duckdb_tables()`)).getRowObjectsJS();
      expect(tables.map((t) => String(t.table_name)).filter((t) => t.startsWith('staging_'))).toEqual([]);
      const runs = (await c.runAndReadAll(`SELECT run_id, status FROM sync_runs`)).getRowObjectsJS();
      expect(runs.map((r) => r.status)).toEqual(['succeeded']);
      // The copy says which warehouse state it holds.
      const watermark = (
        await c.runAndReadAll(`SELECT last_run_id, runs::INTEGER AS runs, mode FROM publish_watermark`)
      ).getRowObjectsJS();
      expect(watermark).toEqual([{ last_run_id: runs[0]?.run_id, runs: 1, mode: 'full' }]);
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

  it("lists in the copy's catalog only the columns its views have (what BI tools build their column lists from)", async () => {
    await nextDay();
    for (const full of [true, false]) {
      if (!full) await nextDay();
      const result = await publishSnapshot(warehouse, undefined, { full });
      const copy = await DuckDBInstance.create(result.databasePath, { access_mode: 'READ_ONLY' });
      try {
        const c = await copy.connect();
        // The catalog first: binding a view (any query of it) refreshes its columns in memory only.
        const catalog = async () =>
          (
            await c.runAndReadAll(
              `SELECT table_name AS t, list(column_name ORDER BY ordinal_position) AS columns
               FROM information_schema.columns WHERE table_name IN ('reports', 'current_reports', 'report_history')
               GROUP BY ALL ORDER BY t`,
            )
          ).getRowObjectsJS();
        const listed = await catalog();
        const bound: unknown[] = [];
        for (const { t } of listed) {
          const described = (await c.runAndReadAll(`DESCRIBE ${String(t)}`)).getRowObjectsJS();
          bound.push({ t, columns: described.map((d) => d.column_name) });
        }
        expect(JSON.stringify(listed)).toBe(JSON.stringify(bound));
        expect(JSON.stringify(listed)).not.toMatch(/hash/);
        c.closeSync();
      } finally {
        copy.closeSync();
      }
    }
  });

  it("publishes whole beside a view of the operator's own that reads a column the copy leaves out", async () => {
    const c = await warehouse.connect();
    await c.run(`CREATE VIEW my_hashes AS SELECT id, line_hash FROM report_rows`);
    c.closeSync();
    const result = await publishSnapshot(warehouse, undefined, { full: true });
    const copy = await DuckDBInstance.create(result.databasePath, { access_mode: 'READ_ONLY' });
    try {
      const cc = await copy.connect();
      const n = (await cc.runAndReadAll('SELECT count(*)::INTEGER AS n FROM reports')).getRowObjectsJS();
      expect(n).toEqual([{ n: 500 }]);
      cc.closeSync();
    } finally {
      copy.closeSync();
    }
  });

  it('writes Parquet as a folder per table, reports in files by period of created_at', async () => {
    const result = await publishSnapshot(warehouse);
    const parquet = result.parquetPath;
    expect(readdirSync(parquet).sort()).toEqual([
      '_publish.json',
      'drift_catalog',
      'drift_events',
      'rejected_records',
      'report_versions',
      'reports',
      'stats_snapshots',
      'stats_values',
      'sync_runs',
    ]);
    // Each file holds the reports created in the period its name says (500 reports of a year: one file).
    const part = readManifest(versionOf(parquet))!.parts['reports/created-']!;
    expect(part.period).toBe('year');
    expect(readdirSync(join(parquet, 'reports')).sort()).toEqual(part.files.map((f) => basename(f.file)));
    for (const file of part.files) {
      const [from, to] = keyRange(part.period, file.key);
      const [outside] = await query(
        warehouse,
        `SELECT count(*) FILTER (WHERE created_at < '${from}' OR created_at >= '${to}') AS n, count(*) AS rows
         FROM read_parquet('${join(parquet, file.file)}')`,
      );
      expect(outside).toEqual({ n: 0, rows: file.rows });
    }
    const names = (
      await query(warehouse, `SELECT DISTINCT name FROM parquet_schema('${join(parquet, '*', '*.parquet')}')`)
    ).map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining(['status', 'destination', 'valid_to', 'raw', 'metric']));
    expect(names).not.toEqual(expect.arrayContaining(['content_hash']));
    expect(names.filter((n) => /hash/.test(String(n)))).toEqual([]);
    // Every version, the current ones (rows of reports) included; empty tables still have a file to read.
    const counts = await query(
      warehouse,
      `SELECT (SELECT count(*) FROM read_parquet('${join(parquet, 'report_versions', '*.parquet')}')) AS parquet,
         (SELECT count(*) FROM report_versions) AS live,
         (SELECT count(*) FROM read_parquet('${join(parquet, 'rejected_records', '*.parquet')}')) AS rejects`,
    );
    expect(counts).toEqual([{ parquet: counts[0]?.live, live: 500, rejects: 0 }]);
    // The analysts' query of docs/dashboards.md: the glob, with Hive partitioning on as it was.
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
  });

  it('after a recent run rewrites only the files of the periods it touched and links the others', async () => {
    // Reports created over six years, one file a year; a recent run reads the newest only.
    const file = join(tmp.dir, 'years.ndjson');
    const day = 86_400_000;
    const lines = Array.from({ length: 200 }, (_, i) => {
      const created = new Date(Date.UTC(2019, 0, 1) + i * 11 * day).toISOString();
      return JSON.stringify({ id: `y${i}`, status: 'SUBMITTED', destination: 'PARKS', createdAt: created });
    });
    writeFileSync(file, `${lines.join('\n')}\n`);
    const years = await startTestSimulator({ dataset: await loadDataset(file) });
    const yearsConfig = testConfig(years.url, join(tmp.dir, 'years.duckdb'), { recentPageSize: 10 });
    const w = await openTestWarehouse(yearsConfig);
    try {
      await syncTargetOnce(w, yearsConfig, 'ndjson');
      const before = versionOf((await publishSnapshot(w)).parquetPath);
      years.advanceDays(1);
      const [recent] = await syncTargetOnce(w, yearsConfig, 'recent');
      expect(recent?.counters.inserted).toBeGreaterThan(0);
      const second = await publishSnapshot(w);
      expect([second.mode, second.parquet.mode]).toEqual(['incremental', 'incremental']);
      const c = recent!.counters;
      expect(second.changes).toMatchObject({ runs: 1, newVersions: c.inserted + c.updated + c.revived });
      const after = versionOf(second.parquetPath);
      const touched = await query(
        w,
        `SELECT DISTINCT strftime(timezone('UTC', created_at), 'created-%Y.parquet') AS f FROM reports
         WHERE run_id = $run`,
        { run: recent!.runId },
      );
      const files = readdirSync(join(after, 'reports')).sort();
      expect(files).toHaveLength(6);
      const same = files.filter(
        (f) => statSync(join(after, 'reports', f)).ino === inodeOr(join(before, 'reports', f)),
      );
      expect(files.filter((f) => !same.includes(f))).toEqual(touched.map((t) => t.f).sort());
      expect(same.length).toBeGreaterThan(3);
      await expectSameAsFullPublish(w, publishedDirFor(w.path), join(tmp.dir, 'full'));
    } finally {
      w.close();
      await years.close();
    }
  });

  it('publishes a destination no folder name can hold, and reads it back as it is', async () => {
    const long = 'Ä'.repeat(128);
    await query(
      warehouse,
      `UPDATE report_rows SET destination = 'NULL' WHERE id = (SELECT min(id) FROM report_rows)`,
    );
    await query(
      warehouse,
      `UPDATE report_rows SET destination = '${long}' WHERE id = (SELECT max(id) FROM report_rows)`,
    );
    const result = await publishSnapshot(warehouse);
    const read = await query(
      warehouse,
      `SELECT destination FROM read_parquet('${join(result.parquetPath, 'reports', '**', '*.parquet')}', hive_partitioning = true)
       WHERE destination IN ('NULL', '${long}') ORDER BY 1`,
    );
    expect(read.map((r) => r.destination)).toEqual(['NULL', long]);
  });

  it('keeps serving the old copy to a reader that has it open, and the new one to the next', async () => {
    await publishSnapshot(warehouse);
    const path = join(publishedDirFor(warehouse.path), 'warehouse.duckdb');
    const old = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
    const count = async (instance: DuckDBInstance) => {
      const c = await instance.connect();
      const n = (await c.runAndReadAll('SELECT count(*)::INTEGER AS n FROM sync_runs')).getRowObjectsJS()[0]
        ?.n;
      c.closeSync();
      return n;
    };
    try {
      expect(await count(old)).toBe(1);
      await nextDay();
      expect((await publishSnapshot(warehouse)).mode).toBe('incremental');
      expect(await count(old)).toBe(1);
      const fresh = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
      expect(await count(fresh)).toBe(2);
      fresh.closeSync();
    } finally {
      old.closeSync();
    }
  });

  it('publishes whole, saying why, when the copy cannot be brought forward', async () => {
    const dir = publishedDirFor(warehouse.path);
    await publishSnapshot(warehouse);
    // Another warehouse's copy: it holds a run this warehouse never had.
    const other = await DuckDBInstance.create(join(dir, 'warehouse.duckdb'));
    const c = await other.connect();
    await c.run(`UPDATE sync_runs SET run_id = 'run-of-another-warehouse'`);
    c.closeSync();
    other.closeSync();
    const foreign = await publishSnapshot(warehouse);
    expect([foreign.mode, foreign.parquet.mode]).toEqual(['full', 'full']);
    expect(foreign.reason).toMatch(/runs this warehouse does not.*run-of-another-warehouse/);
    // A copy that is no DuckDB file.
    writeFileSync(join(dir, 'warehouse.duckdb'), 'not a database');
    const broken = await publishSnapshot(warehouse);
    expect(broken.mode).toBe('full');
    expect(broken.reason).toMatch(/could not be brought forward/);
    expect((await publishSnapshot(warehouse, dir, { full: true })).reason).toBe(
      'a full publish was asked for',
    );
    // A copy mostly free space (rows replaced by many publishes): written whole again, compact.
    const sparse = await DuckDBInstance.create(join(dir, 'warehouse.duckdb'));
    const s = await sparse.connect();
    await s.run(`CREATE TABLE filler AS SELECT repeat(md5(range::VARCHAR), 20) AS t FROM range(120000)`);
    await s.run('CHECKPOINT');
    await s.run('DROP TABLE filler');
    s.closeSync();
    sparse.closeSync();
    const compacted = await publishSnapshot(warehouse);
    expect(compacted.reason).toMatch(/% of the previous copy's file is free space/);
    expect(statSync(join(dir, 'warehouse.duckdb')).size).toBeLessThan(8 * 1024 * 1024);
    // Back on track: the next one applies changes again.
    expect((await publishSnapshot(warehouse)).mode).toBe('incremental');
  });

  it('plans on the published copy while it is copied, and on the temp copy when another process holds it', async () => {
    const dir = publishedDirFor(warehouse.path);
    await publishSnapshot(warehouse);
    await nextDay();
    // Read in place, read-only, while the file is copied: the plan and the copy overlap.
    const inPlace = await publishSnapshot(warehouse);
    expect(inPlace.mode).toBe('incremental');
    expect(Object.keys(inPlace.steps)).toContain('file copy, change set');
    await expectSameAsFullPublish(warehouse, dir, join(tmp.dir, 'full-1'));
    await nextDay();
    // An analyst's `duckdb published/warehouse.duckdb` (read-write) locks it: the plan waits for the copy.
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { DuckDBInstance } from '@duckdb/node-api';
         const db = await DuckDBInstance.create(${JSON.stringify(join(dir, 'warehouse.duckdb'))});
         await db.connect();
         process.stdout.write('open\\n');
         process.stdin.on('end', () => process.exit(0)).resume();`,
      ],
      { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on('data', (d: Buffer) => d.toString().includes('open') && resolve());
        holder.on('exit', (code) => reject(new Error(`the holder exited (${code})`)));
      });
      const held = await publishSnapshot(warehouse);
      expect(held.mode).toBe('incremental');
      expect(Object.keys(held.steps)).toEqual(expect.arrayContaining(['file copy', 'change set']));
    } finally {
      holder.stdin.end();
      await new Promise((resolve) => holder.once('exit', resolve));
    }
    await expectSameAsFullPublish(warehouse, dir, join(tmp.dir, 'full-2'));
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

  it('out of memory: says which limit to raise, and the previous snapshot stays as it was', async () => {
    const first = await publishSnapshot(warehouse);
    await nextDay();
    const c = await warehouse.connect();
    // Far below what writing 500 reports to Parquet takes: DuckDB itself runs out (the setting is the instance's).
    await c.run(`SET memory_limit = '8MiB'`);
    try {
      await expect(publishSnapshot(warehouse)).rejects.toMatchObject({
        code: 'PUBLISH_FAILED',
        message: expect.stringMatching(
          /ran out of memory at its limit of [\d.]+ [KM]iB while publishing the snapshot .*Set REPORTS_DUCKDB_MEMORY_LIMIT higher .*The previous snapshot is unchanged\.$/,
        ),
      });
    } finally {
      await c.run(`SET memory_limit = '256MiB'`);
    }
    c.closeSync();
    expect(readlinkSync(first.parquetPath)).toBe(basename(versionOf(first.parquetPath)));
    const copy = await DuckDBInstance.create(first.databasePath, { access_mode: 'READ_ONLY' });
    try {
      const rows = (await (await copy.connect()).runAndReadAll('SELECT count(*) AS n FROM report_rows'))
        .getRowObjectsJS()
        .map((r) => Number(r.n));
      expect(rows).toEqual([500]);
    } finally {
      copy.closeSync();
    }
  });

  it('a publish that fails once its copy is attached leaves nothing attached, and the next one works', async () => {
    const first = await publishSnapshot(warehouse);
    await nextDay();
    process.env.REPORTS_FAILPOINT = 'publish-parquet:fail';
    try {
      await expect(publishSnapshot(warehouse)).rejects.toMatchObject({ code: 'PUBLISH_FAILED' });
    } finally {
      delete process.env.REPORTS_FAILPOINT;
    }
    // A daemon keeps the instance: an attached copy would hold its memory and file until the next publish.
    const c = await warehouse.connect();
    const attached = await c.runAndReadAll(
      `SELECT count(*)::INTEGER AS n FROM duckdb_databases() WHERE database_name LIKE 'publish%'`,
    );
    c.closeSync();
    expect(attached.getRowObjectsJS()[0]?.n).toBe(0);
    expect(readdirSync(dirname(first.databasePath)).filter((f) => f.startsWith('.'))).toEqual([]);
    const again = await publishSnapshot(warehouse);
    expect(again.mode).toBe('incremental');
  });
});

/** The version folder a `parquet` link points at. */
function versionOf(link: string): string {
  return join(link, '..', readlinkSync(link));
}

/** The inode of a file, or -1 when there is none. */
function inodeOr(path: string): number {
  return existsSync(path) ? statSync(path).ino : -1;
}
