import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/database.js';
import { withCheckpointsDeferred } from '../../src/warehouse/deferred-checkpoint.js';
import { tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const walBytes = (path: string) => (existsSync(`${path}.wal`) ? statSync(`${path}.wal`).size : 0);

describe('statements with automatic checkpoints held back', () => {
  it('commit into the write-ahead log past the threshold, then one checkpoint empties it and the threshold is back, also when they fail', async () => {
    const path = join(tmp.dir, 'w.duckdb');
    const w = await openWarehouse(path);
    const c = await w.connect();
    try {
      await c.run(`SET checkpoint_threshold = '256KiB'`);
      await c.run('CREATE TABLE t AS SELECT range AS id, 0::BIGINT AS h FROM range(200000)');
      await c.run('CHECKPOINT');
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
        withCheckpointsDeferred(c, async () => {
          await c.run('UPDATE t SET h = 0');
          throw new Error('a slice failed');
        }),
      ).rejects.toThrow('a slice failed');
      expect(await setting()).toBe(threshold);
    } finally {
      c.closeSync();
      w.close();
    }
  });
});
