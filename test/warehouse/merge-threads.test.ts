import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withThreads } from '../../src/warehouse/threads.js';

let instance: DuckDBInstance;
let c: DuckDBConnection;
beforeEach(async () => {
  instance = await DuckDBInstance.create(':memory:', { threads: '1' });
  c = await instance.connect();
});
afterEach(() => {
  c.closeSync();
  instance.closeSync();
});

const threads = async (conn: DuckDBConnection) =>
  Number((await conn.runAndReadAll(`SELECT current_setting('threads') AS t`)).getRowObjectsJS()[0]!.t);

describe('withThreads (the merge runs with more DuckDB threads than the reading)', () => {
  it('raises threads for the work and restores the setting it found, also on a second connection', async () => {
    const other = await instance.connect();
    try {
      const seen = await withThreads(c, 3, async () => [await threads(c), await threads(other)]);
      expect(seen).toEqual([3, 3]);
      expect(await threads(c)).toBe(1);
    } finally {
      other.closeSync();
    }
  });

  it('restores the setting when the work throws, and passes the error on', async () => {
    await expect(
      withThreads(c, 2, async () => {
        throw new Error('merge failed');
      }),
    ).rejects.toThrow('merge failed');
    expect(await threads(c)).toBe(1);
  });

  it('never lowers a higher setting (a reader configured with more threads keeps them)', async () => {
    await c.run('SET threads = 4');
    expect(await withThreads(c, 2, () => threads(c))).toBe(4);
    expect(await threads(c)).toBe(4);
  });
});
