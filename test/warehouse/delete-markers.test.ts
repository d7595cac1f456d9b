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

/** A warehouse file whose `report_rows` holds `ROWS` rows, reopened (nothing of it loaded yet). */
async function stored(change: string | undefined) {
  const path = join(tmp.dir, 'w.duckdb');
  const w = await openWarehouse(path);
  const c = await w.connect();
  await c.run(`CREATE TABLE report_rows AS SELECT range AS id, range % 7 AS status FROM range(${ROWS})`);
  if (change) await c.run(change);
  await c.run('CHECKPOINT');
  w.close();
  warehouse = await openWarehouse(path, { threads: 1 });
  return warehouse.connect();
}

/** Whether DuckDB accepts `limit` now (it refuses one below the memory it cannot evict); then 1GiB again. */
async function accepts(c: Awaited<ReturnType<typeof stored>>, limit: string) {
  const ok = await c.run(`SET memory_limit = '${limit}'`).then(
    () => true,
    () => false,
  );
  await c.run(`SET memory_limit = '1GiB'`);
  return ok;
}

describe('the memory DuckDB holds for deleted rows of report_rows', () => {
  it('is none without deleted rows', async () => {
    const c = await stored(undefined);
    expect(await deleteMarkerBytes(c)).toBe(0);
    await c.run('SELECT max(status) FROM report_rows');
    expect(await accepts(c, '8MiB')).toBe(true);
  });

  it('is 8 bytes a stored row once deletes are spread over the table, held after a scan', async () => {
    // One report in a hundred replaced, as a night's merge does: deletes in every row group.
    const c = await stored('DELETE FROM report_rows WHERE id % 100 = 0');
    expect(await accepts(c, '8MiB')).toBe(true);
    await c.run('SELECT max(status) FROM report_rows');
    // 19 MiB of markers: DuckDB cannot go below them any more.
    expect(await accepts(c, '8MiB')).toBe(false);
    expect(await accepts(c, `${Math.ceil((8 * ROWS) / MiB) + 8}MiB`)).toBe(true);
    expect(await deleteMarkerBytes(c)).toBe(8 * ROWS);
  });

  it('counts only the row groups a checkpoint kept (wholly deleted ones are dropped)', async () => {
    const groups = Math.ceil(ROWS / 122_880);
    const c = await stored(`DELETE FROM report_rows WHERE id < 122880 * ${groups - 1} OR id % 100 = 0`);
    const slots = ROWS - 122_880 * (groups - 1);
    expect(await deleteMarkerBytes(c)).toBe(8 * slots);
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
