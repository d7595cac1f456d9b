import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sizeBytes, withMemoryLimit } from '../../src/warehouse/memory-limit.js';

let instance: DuckDBInstance;
let c: DuckDBConnection;
beforeEach(async () => {
  instance = await DuckDBInstance.create(':memory:', { memory_limit: '256MiB' });
  c = await instance.connect();
});
afterEach(() => {
  c.closeSync();
  instance.closeSync();
});

const limit = async () =>
  String((await c.runAndReadAll(`SELECT current_setting('memory_limit') AS m`)).getRowObjectsJS()[0]!.m);

describe('withMemoryLimit (a sync reads with a lower DuckDB memory limit than it merges with)', () => {
  it('lowers the limit for the work and restores the one it found', async () => {
    expect(await withMemoryLimit(c, '128MiB', limit)).toBe('128.0 MiB');
    expect(await limit()).toBe('256.0 MiB');
  });

  it('restores the limit when the work throws, and passes the error on', async () => {
    await expect(
      withMemoryLimit(c, '64MiB', async () => {
        throw new Error('read failed');
      }),
    ).rejects.toThrow('read failed');
    expect(await limit()).toBe('256.0 MiB');
  });

  it('never raises the limit (an instance configured lower keeps its limit)', async () => {
    expect(await withMemoryLimit(c, '1GiB', limit)).toBe('256.0 MiB');
    await c.run(`SET memory_limit = '100MB'`);
    expect(await withMemoryLimit(c, '128MiB', limit)).toBe(await limit());
  });

  it('reads every size DuckDB prints as the bytes it stands for (property)', async () => {
    // From 16 MB up: a limit of a few KB leaves DuckDB no memory to answer the next query.
    const units = ['MB', 'GB', 'MiB', 'GiB'] as const;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 16, max: 4096 }), fc.constantFrom(...units), async (n, given) => {
        await c.run(`SET memory_limit = '${n}${given}'`);
        const bytes = sizeBytes(`${n}${given}`)!;
        // DuckDB prints one decimal of the unit it picks: the bytes read back are within a tenth of it.
        const printed = await limit();
        const unit = sizeBytes(`1 ${printed.split(' ')[1]}`)!;
        expect(Math.abs(sizeBytes(printed)! - bytes)).toBeLessThanOrEqual(0.1 * unit);
      }),
      { numRuns: 40 },
    );
  });
});
