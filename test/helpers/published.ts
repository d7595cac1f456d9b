import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { expect } from 'vitest';
import { duckdbApi } from '../../src/warehouse/duckdb-api.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { publishSnapshot } from '../../src/warehouse/publish.js';
import { MANIFEST_FILE, readManifest } from '../../src/warehouse/publish-parquet.js';

/** Bookkeeping of a publish that differs between any two publishes (its id, time and how it was made). */
const PER_PUBLISH = ['publish_id', 'published_at', 'mode', 'reason'];

/**
 * Publishes `warehouse` whole into `fullDir` and expects the published folder `dir` (brought there by
 * incremental publishes) to hold the same: every table and view of the copy (as multisets of rows), the
 * same watermark, the same Parquet folders with the same files, and the same rows in each folder.
 */
export async function expectSameAsFullPublish(
  warehouse: Warehouse,
  dir: string,
  fullDir: string,
): Promise<void> {
  const full = await publishSnapshot(warehouse, fullDir, { full: true });
  expect(full.mode).toBe('full');
  const instance = await duckdbApi.DuckDBInstance.create(':memory:');
  const c = await instance.connect();
  try {
    await c.run(`ATTACH '${join(dir, 'warehouse.duckdb')}' AS inc (READ_ONLY)`);
    await c.run(`ATTACH '${join(fullDir, 'warehouse.duckdb')}' AS whole (READ_ONLY)`);
    const relations = await rows(
      c,
      `SELECT table_name AS name FROM duckdb_tables() WHERE database_name = 'whole'
       UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name = 'whole' AND NOT internal ORDER BY 1`,
    );
    const names = relations.map((r) => String(r.name));
    expect(names).toEqual(expect.arrayContaining(['reports', 'report_versions', 'publish_watermark']));
    for (const name of names) {
      const columns = name === 'publish_watermark' ? `* EXCLUDE (${PER_PUBLISH.join(', ')})` : '*';
      const [d] = await rows(
        c,
        differenceSql(`SELECT ${columns} FROM inc.${name}`, `SELECT ${columns} FROM whole.${name}`),
      );
      expect({ name, ...d }).toEqual({ name, missing: 0, extra: 0 });
    }
    await expectSameParquet(c, join(dir, 'parquet'), join(fullDir, 'parquet'));
  } finally {
    c.closeSync();
    instance.closeSync();
  }
}

async function expectSameParquet(c: DuckDBConnection, inc: string, whole: string): Promise<void> {
  const folders = (dir: string) =>
    readdirSync(dir)
      .filter((f) => f !== MANIFEST_FILE)
      .sort();
  expect(folders(inc)).toEqual(folders(whole));
  const files = (dir: string) =>
    Object.fromEntries(
      Object.entries(readManifest(dir)?.parts ?? {}).map(([id, p]) => [
        id,
        p.files.map((f) => f.file).sort(),
      ]),
    );
  expect(files(inc)).toEqual(files(whole));
  for (const folder of folders(whole)) {
    const read = (dir: string) =>
      `SELECT * FROM read_parquet('${join(dir, folder, '*.parquet')}', union_by_name = true)`;
    const [d] = await rows(c, differenceSql(read(inc), read(whole)));
    expect({ folder, ...d }).toEqual({ folder, missing: 0, extra: 0 });
  }
}

/** Rows of `whole` that `inc` lacks (`missing`) and rows it has beyond them (`extra`), duplicates counted. */
function differenceSql(inc: string, whole: string): string {
  return `SELECT (SELECT count(*) FROM (${whole} EXCEPT ALL ${inc}))::INTEGER AS missing,
    (SELECT count(*) FROM (${inc} EXCEPT ALL ${whole}))::INTEGER AS extra`;
}

async function rows(c: DuckDBConnection, sql: string): Promise<Record<string, unknown>[]> {
  return (await c.runAndReadAll(sql)).getRowObjectsJS();
}
