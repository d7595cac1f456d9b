import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/warehouse/database.js';
import { deleteMarkerBytes } from '../../src/warehouse/delete-markers.js';
import { mergeSliceRows } from '../../src/warehouse/merge.js';
import { tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
let warehouse: Warehouse | undefined;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => {
  warehouse?.close();
  warehouse = undefined;
  tmp.cleanup();
});

const MiB = 2 ** 20;
const ROWS = 2_500_000;
const VECTORS = Math.ceil(ROWS / 2_048);
const ROW_GROUPS = Math.ceil(ROWS / 122_880);

/** A warehouse file whose `report_rows` holds `ROWS` rows, `change` applied, reopened (nothing loaded). */
async function stored(change: string | undefined) {
  const path = join(tmp.dir, 'w.duckdb');
  const w = await openWarehouse(path, { threads: 1 });
  const c = await w.connect();
  await c.run(`CREATE TABLE report_rows AS SELECT range AS id, range % 7 AS status FROM range(${ROWS})`);
  if (change) await c.run(change);
  await c.run('CHECKPOINT');
  w.close();
  warehouse = await openWarehouse(path, { threads: 1 });
  return warehouse.connect();
}

/**
 * Whether DuckDB accepts a `memory_limit` of `mib` now: it refuses one below the memory it cannot evict.
 * The limit is set back to 1GiB either way.
 */
async function accepts(c: Awaited<ReturnType<typeof stored>>, mib: number) {
  const ok = await c.run(`SET memory_limit = '${Math.round(mib)}MiB'`).then(
    () => true,
    (err: Error) => {
      expect(err.message).toMatch(/memory/i);
      return false;
    },
  );
  await c.run(`SET memory_limit = '1GiB'`);
  return ok;
}

describe('the memory DuckDB holds for deleted rows of report_rows', () => {
  it('is none without deleted rows', async () => {
    const c = await stored(undefined);
    await c.run('SELECT max(status) FROM report_rows');
    expect(await accepts(c, 4)).toBe(true);
    expect(await deleteMarkerBytes(c)).toBe(0);
  });

  it('covers what DuckDB holds after a scan when deletes are spread over every vector', async () => {
    // One report in a hundred replaced, as a night's merge of uniform changes does.
    const c = await stored('DELETE FROM report_rows WHERE id % 100 = 0');
    expect(await accepts(c, 4)).toBe(true);
    await c.run('SELECT max(status) FROM report_rows');
    const estimate = await deleteMarkerBytes(c);
    expect(estimate).toBe(VECTORS * 14 * 1024 + ROW_GROUPS * 256 * 1024);
    // ~22 MiB estimated: DuckDB cannot go below most of it any more, and fits in it with a little room.
    expect(await accepts(c, (0.8 * estimate) / MiB)).toBe(false);
    expect(await accepts(c, estimate / MiB + 4)).toBe(true);
  });

  it('is small when the deletes sit together, as changes of recent reports do', async () => {
    const c = await stored(`DELETE FROM report_rows WHERE id >= ${ROWS - 50_000} AND id % 100 = 0`);
    await c.run('SELECT max(status) FROM report_rows');
    const estimate = await deleteMarkerBytes(c);
    expect(estimate).toBeLessThan(2 * MiB);
    expect(await accepts(c, estimate / MiB + 4)).toBe(true);
  });

  it('counts nothing for vectors deleted whole, and row groups a checkpoint dropped', async () => {
    const c = await stored(`DELETE FROM report_rows WHERE id < 122880 * 3 OR (id // 2048) % 2 = 1`);
    await c.run('SELECT max(status) FROM report_rows');
    expect(await deleteMarkerBytes(c)).toBe(0);
    expect(await accepts(c, 4)).toBe(true);
  });
});

describe('the merge slices', () => {
  it('take 2,000 staged reports per MiB of the limit the delete markers leave, at most 1M', () => {
    expect(mergeSliceRows(0, '128MiB')).toBe(256_000);
    expect(mergeSliceRows(0, '512MiB')).toBe(1_000_000);
    // 40M reports: ~300 MiB of markers in a 512MiB limit.
    expect(mergeSliceRows(0, '512MiB', 300 * MiB)).toBe(424_000);
    expect(mergeSliceRows(0, '128MiB', 200 * MiB)).toBe(10_000);
    expect(mergeSliceRows(50_000, '128MiB', 100 * MiB)).toBe(50_000);
  });
});
