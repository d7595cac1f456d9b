import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { sizeBytes, withMemoryLimit } from '../../src/warehouse/memory-limit.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

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

  it('runs the work at the limit it found when DuckDB refuses the lower one (memory held elsewhere)', async () => {
    // Another connection's data that DuckDB cannot evict (in memory, no temp folder): ~140 MiB.
    const held = await DuckDBInstance.create(':memory:', { memory_limit: '1GiB', temp_directory: '' });
    const other = await held.connect();
    const mine = await held.connect();
    try {
      await other.run(`CREATE TABLE kept AS SELECT range AS a, md5(range::VARCHAR) AS b FROM range(3000000)`);
      const limitOf = async () =>
        String((await mine.runAndReadAll(`SELECT current_setting('memory_limit') AS m`)).getRows()[0]![0]);
      const before = await limitOf();
      let ran = false;
      const inside = await withMemoryLimit(mine, '50MB', async () => {
        ran = true;
        return limitOf();
      });
      expect(ran).toBe(true);
      expect(inside).toBe(before);
      expect(await limitOf()).toBe(before);
    } finally {
      mine.closeSync();
      other.closeSync();
      held.closeSync();
    }
  });

  it('never raises the limit (an instance configured lower keeps its limit)', async () => {
    expect(await withMemoryLimit(c, '1GiB', limit)).toBe('256.0 MiB');
    await c.run(`SET memory_limit = '100MB'`);
    expect(await withMemoryLimit(c, '128MiB', limit)).toBe(await limit());
  });

  it('reads every size DuckDB prints as the bytes it stands for (property)', async () => {
    // From 16 MB up: a limit of a few KB leaves DuckDB no memory to answer the next query. Up to 1,000
    // GiB: from 1 TiB DuckDB's tenth is not the value's (`1430GB` prints as "1.2 TiB", 1.30 TiB).
    const units = ['MB', 'GB', 'MiB', 'GiB'] as const;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 16, max: 1000 }), fc.constantFrom(...units), async (n, given) => {
        await c.run(`SET memory_limit = '${n}${given}'`);
        const bytes = sizeBytes(`${n}${given}`)!;
        // DuckDB prints one decimal of the unit it picks, cut rather than rounded, and a hair lower still
        // at times (`265GB`, 246.8005 GiB, prints as "246.7 GiB": 0.1005 GiB under): the bytes read back
        // are within a tenth of the unit, and that hair.
        const printed = await limit();
        const unit = sizeBytes(`1 ${printed.split(' ')[1]}`)!;
        expect(Math.abs(sizeBytes(printed)! - bytes)).toBeLessThanOrEqual(0.101 * unit);
      }),
      { numRuns: 40 },
    );
  });
});

describe('a sync reading with the lower limit', () => {
  it('still stages the longest record REPORTS_MAX_RECORD_BYTES allows', async () => {
    const tmp = tempDir();
    // ~15 MB of unknown fields: the staged line holds them twice (~30 MB), more than 128MiB lets
    // read_json load, so the reading limit must follow the record bound.
    const big = 'x'.repeat(15_000_000);
    const body = [
      { id: 'BIG', extraText: big },
      { id: 'SMALL', extraText: 'y' },
    ]
      .map(({ id, extraText }) =>
        JSON.stringify({
          id,
          status: 'SUBMITTED',
          destination: 'ROAD_CONTROL',
          createdAt: '2024-01-01T00:00:00.000Z',
          updatedAt: '2024-01-02T00:00:00.000Z',
          note: extraText,
        }),
      )
      .join('\n');
    const server = await startRawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(`${body}\n`);
    });
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), {
      maxRecordBytes: 16 * 1024 * 1024,
      extraMaxBytes: 16 * 1024 * 1024,
      duckdbReadMemoryLimit: '128MiB',
      duckdbMemoryLimit: '512MiB',
    });
    const warehouse = await openTestWarehouse(config);
    try {
      const run = await syncOnce(warehouse, config, ndjsonSource);
      expect(run.counters).toMatchObject({ recordsLoaded: 2, recordsRejected: 0 });
      const rows = await query(warehouse, `SELECT id, length(extra->>'note') AS n FROM reports ORDER BY id`);
      expect(rows).toEqual([
        { id: 'BIG', n: big.length },
        { id: 'SMALL', n: 1 },
      ]);
    } finally {
      warehouse.close();
      await server.close();
      tmp.cleanup();
    }
  });
});
