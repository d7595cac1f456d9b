import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/warehouse/database.js';
import { keyRange, type ParquetPart } from '../../src/warehouse/parquet-layout.js';
import { partitionsPerCopy, type PartitionBudget } from '../../src/warehouse/parquet-partitioned.js';
import { writePartFiles } from '../../src/warehouse/parquet-write.js';
import { tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
let warehouse: Warehouse;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => {
  warehouse?.close();
  tmp.cleanup();
});

const part: ParquetPart = {
  id: 'wide/week-',
  folder: 'wide',
  prefix: 'week-',
  table: 'wide',
  select: '*',
  timeColumn: 'created_at',
  period: 'week',
};

/**
 * A table of `rows` rows with `columns` text columns, created over `weeks` weeks in no time order (as a
 * merged `reports` table is stored): its files are written by partitioned `COPY`s.
 */
async function wideTable(rows: number, weeks: number, columns: number) {
  warehouse = await openWarehouse(join(tmp.dir, 'w.duckdb'), { threads: 1 });
  const c = await warehouse.connect();
  const texts = Array.from({ length: columns }, (_, k) => `md5((i * ${k + 1})::VARCHAR) AS c${k}`);
  await c.run(
    `CREATE TABLE wide AS SELECT i AS id,
       TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds((hash(i) % ${weeks * 7 * 86400})::BIGINT) AS created_at,
       ${texts.join(', ')}
     FROM range(${rows}) r(i)`,
  );
  await c.run('CHECKPOINT');
  return c;
}

/** Rows of the written files that are not in the table, or in the table and not in the files, or twice. */
async function differences(c: Awaited<ReturnType<typeof wideTable>>, dir: string) {
  const glob = `'${join(dir, part.folder, '*.parquet')}'`;
  const reader = await c.runAndReadAll(
    `SELECT
       (SELECT count(*) FROM (SELECT * FROM read_parquet(${glob}) EXCEPT ALL SELECT * FROM wide))::INTEGER AS extra,
       (SELECT count(*) FROM (SELECT * FROM wide EXCEPT ALL SELECT * FROM read_parquet(${glob})))::INTEGER AS missing`,
  );
  return reader.getRowObjectsJS()[0];
}

/** Files holding a row outside the week their key names. */
async function misplaced(
  c: Awaited<ReturnType<typeof wideTable>>,
  dir: string,
  files: { key: number; file: string }[],
) {
  const wrong: string[] = [];
  for (const f of files) {
    const [from, to] = keyRange('week', f.key);
    const reader = await c.runAndReadAll(
      `SELECT count(*)::INTEGER AS n FROM read_parquet('${join(dir, f.file)}')
       WHERE NOT (created_at >= '${from}'::TIMESTAMPTZ AND created_at < '${to}'::TIMESTAMPTZ)`,
    );
    if (Number(reader.getRowObjectsJS()[0]!.n) > 0) wrong.push(f.file);
  }
  return wrong;
}

describe('Parquet files written by partitioned COPY within the memory limit', () => {
  it('writes the 60 weekly files of 100,000 rows at 64MiB, where one COPY of every week runs out of memory', async () => {
    const c = await wideTable(100_000, 60, 18);
    await c.run(`SET memory_limit = '64MiB'`);
    // The premise: every week in one partitioned COPY does not fit.
    await expect(
      c.run(
        `COPY (SELECT *, yearweek(created_at) AS __key FROM wide)
         TO '${join(tmp.dir, 'one')}' (FORMAT parquet, PARTITION_BY (__key))`,
      ),
    ).rejects.toThrow(/Out of Memory/);
    const dir = join(tmp.dir, 'set');
    const files = await writePartFiles(c, 'w', part, 'week', 'all', dir);

    await c.run(`SET memory_limit = '1GiB'`);
    expect(files).toHaveLength(60);
    expect(files.reduce((n, f) => n + f.rows, 0)).toBe(100_000);
    expect(await differences(c, dir)).toEqual({ extra: 0, missing: 0 });
    expect(await misplaced(c, dir, files)).toEqual([]);
    expect(partitionsPerCopy(64 * 2 ** 20, 1)).toBeLessThan(60);
  });

  it('writes again with half the weeks when a COPY ran out of memory, keeps the size that fit, and leaves no scratch folder', async () => {
    // 40 columns: more memory per partition than the sizing assumes, so the first COPY runs out.
    const c = await wideTable(100_000, 60, 40);
    await c.run(`SET memory_limit = '128MiB'`);
    const budget: PartitionBudget = { partitions: Infinity };
    const dir = join(tmp.dir, 'set');
    const files = await writePartFiles(c, 'w', part, 'week', 'all', dir, budget);

    await c.run(`SET memory_limit = '1GiB'`);
    expect(budget.partitions).toBeLessThan(partitionsPerCopy(128 * 2 ** 20, 1));
    expect(readdirSync(dir)).toEqual(['wide']);
    expect(files).toHaveLength(60);
    expect(await differences(c, dir)).toEqual({ extra: 0, missing: 0 });
    expect(await misplaced(c, dir, files)).toEqual([]);
  });

  it('writes only the keys asked for', async () => {
    const c = await wideTable(20_000, 30, 4);
    await c.run(`SET memory_limit = '64MiB'`);
    const all = await writePartFiles(c, 'w', part, 'week', 'all', join(tmp.dir, 'all'));
    const some = all.filter((_, i) => i % 3 === 0);
    const dir = join(tmp.dir, 'some');
    const files = await writePartFiles(
      c,
      'w',
      part,
      'week',
      some.map((f) => f.key),
      dir,
    );
    expect(files.map((f) => [f.key, f.rows])).toEqual(some.map((f) => [f.key, f.rows]));
    expect(await misplaced(c, dir, files)).toEqual([]);
  });

  it('sizes the partitions of one COPY from the memory limit and the threads', () => {
    expect(partitionsPerCopy(128 * 2 ** 20, 1)).toBe(48);
    expect(partitionsPerCopy(128 * 2 ** 20, 2)).toBe(24);
    // A 4M-report publish: DuckDB holds 74 MiB of delete markers.
    expect(partitionsPerCopy(128 * 2 ** 20, 1, 74 * 2 ** 20)).toBe(18);
    expect(partitionsPerCopy(512 * 2 ** 20, 2)).toBe(100);
    expect(partitionsPerCopy(16 * 2 ** 20, 1)).toBe(3);
    expect(partitionsPerCopy(64 * 2 ** 20, 1, 64 * 2 ** 20)).toBe(1);
    expect(partitionsPerCopy(undefined, 1)).toBe(Infinity);
  });
});
