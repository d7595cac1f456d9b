import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/database.js';
import { withCheckpointsDeferred, withoutStagingVacuum } from '../../src/warehouse/deferred-checkpoint.js';
import { tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const walBytes = (path: string) => (existsSync(`${path}.wal`) ? statSync(`${path}.wal`).size : 0);

/** A warehouse whose 200,000-row table `t` is checkpointed, with a 256 KiB checkpoint threshold. */
async function smallThresholdWarehouse(path: string) {
  const w = await openWarehouse(path);
  const c = await w.connect();
  await c.run(`SET checkpoint_threshold = '256KiB'`);
  await c.run('CREATE TABLE t AS SELECT range AS id, 0::BIGINT AS h FROM range(200000)');
  await c.run('CHECKPOINT');
  return { w, c };
}

describe('statements with automatic checkpoints held back', () => {
  it('commit into the write-ahead log past the threshold, then one checkpoint empties it and the threshold is back, also when they fail', async () => {
    const path = join(tmp.dir, 'w.duckdb');
    const { w, c } = await smallThresholdWarehouse(path);
    try {
      const setting = async () =>
        (await c.runAndReadAll(`SELECT current_setting('checkpoint_threshold')::VARCHAR`)).getRows()[0]![0];
      const threshold = await setting();

      let walDuring = 0;
      await withCheckpointsDeferred(c, async () => {
        for (let slice = 0; slice < 4; slice++) {
          await c.run(`UPDATE t SET h = id * ${slice + 2} WHERE id % 4 = ${slice}`);
        }
        walDuring = walBytes(path);
      });
      // Four committed updates of 50,000 rows: well past 256 KiB of log, none checkpointed meanwhile.
      expect(walDuring).toBeGreaterThan(256 * 1024);
      expect(walBytes(path)).toBeLessThan(walDuring);
      expect(await setting()).toBe(threshold);
      const sum = (
        await c.runAndReadAll('SELECT sum(h - id * (id % 4 + 2))::DOUBLE FROM t')
      ).getRows()[0]![0];
      expect(sum).toBe(0);

      await expect(
        withCheckpointsDeferred(
          c,
          async () => {
            await c.run('UPDATE t SET h = 0');
            throw new Error('a slice failed');
          },
          async () => {
            throw new Error('not after a failure');
          },
        ),
      ).rejects.toThrow('a slice failed');
      expect(await setting()).toBe(threshold);
      // No checkpoint after a failure (on a full disk it would invalidate the instance the caller records
      // the failure in): the committed update stays in the log, and is read back all the same.
      expect(walBytes(path)).toBeGreaterThan(256 * 1024);
      expect((await c.runAndReadAll('SELECT count(*)::INTEGER FROM t WHERE h <> 0')).getRows()[0]![0]).toBe(
        0,
      );
    } finally {
      c.closeSync();
      w.close();
    }
  });

  it('runs the step before the checkpoint once the statements committed, with the log still full', async () => {
    const path = join(tmp.dir, 'w.duckdb');
    const { w, c } = await smallThresholdWarehouse(path);
    try {
      const seen: number[] = [];
      const result = await withCheckpointsDeferred(
        c,
        async () => {
          await c.run('UPDATE t SET h = id + 1');
          return 'merged';
        },
        async () => {
          seen.push(walBytes(path));
          throw new Error('a failed eviction does not stop the checkpoint');
        },
      );
      expect(result).toBe('merged');
      expect(seen).toHaveLength(1);
      expect(seen[0]).toBeGreaterThan(256 * 1024);
      expect(walBytes(path)).toBeLessThan(seen[0]!);
    } finally {
      c.closeSync();
      w.close();
    }
  });
});

describe("a sync's reading with the checkpoint vacuum off", () => {
  // Twenty committed batches of 100,000 rows: each ends in a part-filled row group, as staging batches do.
  const stageBatches = async (c: DuckDBConnection) => {
    await c.run('CREATE TABLE staging (id VARCHAR, n BIGINT, d VARCHAR)');
    for (let k = 0; k < 20; k++) {
      await c.run('BEGIN TRANSACTION');
      await c.run(
        `INSERT INTO staging SELECT 'R-' || (i + ${k * 100_000}), i, md5(i::VARCHAR) || repeat('x', (i % 50)::INT)
         FROM range(100000) r(i)`,
      );
      await c.run('COMMIT');
    }
  };
  const rowGroups = async (c: DuckDBConnection) =>
    Number(
      (
        await c.runAndReadAll(`SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('staging')`)
      ).getRows()[0]![0],
    );
  const vacuumTasks = async (c: DuckDBConnection) =>
    Number((await c.runAndReadAll(`SELECT current_setting('max_vacuum_tasks')::BIGINT`)).getRows()[0]![0]);

  it('checkpoints the staged batches without rewriting them, and the vacuum is back afterwards, also when reading fails', async () => {
    const plain = await openWarehouse(join(tmp.dir, 'plain.duckdb'));
    const p = await plain.connect();
    const w = await openWarehouse(join(tmp.dir, 'w.duckdb'));
    const c = await w.connect();
    try {
      // The premise: a checkpoint with the vacuum on merges the part-filled row groups (rewrites them).
      await stageBatches(p);
      await p.run('CHECKPOINT');
      expect(await rowGroups(p)).toBeLessThan(20);

      const before = await vacuumTasks(c);
      expect(before).toBeGreaterThan(0);
      await withoutStagingVacuum(c, () => stageBatches(c));
      expect(walBytes(join(tmp.dir, 'w.duckdb'))).toBeLessThan(64 * 1024);
      expect(await rowGroups(c)).toBe(20);
      expect(Number((await c.runAndReadAll('SELECT count(*) FROM staging')).getRows()[0]![0])).toBe(
        2_000_000,
      );
      expect(await vacuumTasks(c)).toBe(before);

      await expect(
        withoutStagingVacuum(c, async () => {
          expect(await vacuumTasks(c)).toBe(0);
          throw new Error('the export broke off');
        }),
      ).rejects.toThrow('the export broke off');
      expect(await vacuumTasks(c)).toBe(before);

      // A staging too small to be worth its own checkpoint stays in the log for the merge's commit.
      await withoutStagingVacuum(
        c,
        () => c.run('CREATE TABLE small AS SELECT range AS n FROM range(1000)'),
        () => false,
      );
      expect(walBytes(join(tmp.dir, 'w.duckdb'))).toBeGreaterThan(0);
      expect(await vacuumTasks(c)).toBe(before);
    } finally {
      p.closeSync();
      plain.close();
      c.closeSync();
      w.close();
    }
  });
});
