import type { DuckDBConnection } from '@duckdb/node-api';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/warehouse/database.js';
import {
  mergeMayVacuum,
  storedRows,
  VACUUM_DELETED_SHARE,
  withVacuum,
} from '../../src/warehouse/vacuum-policy.js';
import { tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
let w: Warehouse;
let c: DuckDBConnection;
beforeEach(async () => {
  tmp = tempDir();
  w = await openWarehouse(join(tmp.dir, 'w.duckdb'));
  c = await w.connect();
});
afterEach(() => {
  c.closeSync();
  w.close();
  tmp.cleanup();
});

const ROW_GROUP = 122_880;
const rowGroups = async () =>
  Number(
    (
      await c.runAndReadAll(`SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('report_rows')`)
    ).getRows()[0]![0],
  );
const vacuumTasks = async () =>
  Number((await c.runAndReadAll(`SELECT current_setting('max_vacuum_tasks')::BIGINT`)).getRows()[0]![0]);

describe('the checkpoint vacuum of deleted rows', () => {
  it('keeps deleted rows stored while it is off, and merges the row groups they thin out once it is on', async () => {
    await c.run(`CREATE TABLE report_rows AS SELECT range AS n FROM range(${3 * ROW_GROUP})`);
    await c.run('CHECKPOINT');
    // Three quarters of the second and third row groups deleted: together they fit in one.
    await c.run(`DELETE FROM report_rows WHERE n >= ${ROW_GROUP} AND n % 4 <> 0`);
    const deleted = (2 * ROW_GROUP * 3) / 4;
    expect(await storedRows(c)).toEqual({ stored: 3 * ROW_GROUP, deleted });

    const before = await vacuumTasks();
    expect(before).toBeGreaterThan(0);
    await withVacuum(c, false, async () => {
      expect(await vacuumTasks()).toBe(0);
      await c.run('CHECKPOINT');
    });
    expect(await vacuumTasks()).toBe(before);
    expect(await storedRows(c)).toEqual({ stored: 3 * ROW_GROUP, deleted });
    expect(await rowGroups()).toBe(3);

    await c.run('INSERT INTO report_rows VALUES (-1)'); // a change: a checkpoint with nothing to write is skipped
    await withVacuum(c, true, () => c.run('CHECKPOINT'));
    expect(await storedRows(c)).toEqual({ stored: 3 * ROW_GROUP + 1 - deleted, deleted: 0 });
    expect(await rowGroups()).toBe(2);
  });

  it('is back as it was when the work throws', async () => {
    const before = await vacuumTasks();
    await expect(
      withVacuum(c, false, async () => {
        throw new Error('the merge failed');
      }),
    ).rejects.toThrow('the merge failed');
    expect(await vacuumTasks()).toBe(before);
  });
});

describe('which merges may vacuum', () => {
  it('a full export always; another run once an eighth of the stored rows are deleted', async () => {
    await c.run('CREATE TABLE report_rows AS SELECT range AS n FROM range(8000)');
    expect(await mergeMayVacuum(c, true)).toBe(true);
    expect(await mergeMayVacuum(c, false)).toBe(false);
    // One row short of an eighth deleted, then exactly an eighth.
    await c.run(`DELETE FROM report_rows WHERE n < ${8000 * VACUUM_DELETED_SHARE - 1}`);
    expect(await mergeMayVacuum(c, false)).toBe(false);
    await c.run(`DELETE FROM report_rows WHERE n = ${8000 * VACUUM_DELETED_SHARE - 1}`);
    expect(await storedRows(c)).toEqual({ stored: 8000, deleted: 1000 });
    expect(await mergeMayVacuum(c, false)).toBe(true);
  });
});
