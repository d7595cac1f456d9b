import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/run-sync.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { silentLogger } from '../../src/util/logger.js';
import { loadKnownLines } from '../../src/warehouse/known-line-hashes.js';
import { evictCachedBlocks } from '../../src/warehouse/memory-limit.js';
import { startRawServer, type RawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// A sync builds its known-line set from a scan of the line-hash column; DuckDB would keep those blocks
// cached through the whole reading. evictCachedBlocks hands them back.

const baseTableBytes = async (c: DuckDBConnection) =>
  Number(
    (
      await c.runAndReadAll(`SELECT memory_usage_bytes AS b FROM duckdb_memory() WHERE tag = 'BASE_TABLE'`)
    ).getRows()[0]![0],
  );
const limitOf = async (c: DuckDBConnection) =>
  String((await c.runAndReadAll(`SELECT current_setting('memory_limit')`)).getRows()[0]![0]);

describe('evictCachedBlocks', () => {
  let tmp: ReturnType<typeof tempDir>;
  let instance: DuckDBInstance;
  let a: DuckDBConnection;
  let b: DuckDBConnection;

  beforeEach(async () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'cache.duckdb');
    // Written and closed first, so the next instance reads the table's blocks from the file.
    const writer = await DuckDBInstance.create(path);
    const w = await writer.connect();
    await w.run(`CREATE TABLE t AS SELECT range AS h, hash(range) AS g FROM range(3000000)`);
    // A deleted row in every vector, as nightly runs leave them: DuckDB holds their markers (~24 MiB at
    // 3M rows) and cannot evict them, so it refuses the 1 MiB limit, as it does in a warehouse.
    await w.run(`DELETE FROM t WHERE h % 1000 = 0`);
    await w.run('CHECKPOINT');
    w.closeSync();
    writer.closeSync();
    instance = await DuckDBInstance.create(path, { memory_limit: '256MiB' });
    a = await instance.connect();
    b = await instance.connect();
  });
  afterEach(() => {
    a.closeSync();
    b.closeSync();
    instance.closeSync();
    tmp.cleanup();
  });

  it('hands back the blocks a finished scan left cached, and restores the limit', async () => {
    await a.runAndReadAll(`SELECT sum(h), sum(g) FROM t`);
    const cached = await baseTableBytes(a);
    // Two BIGINT columns of 3M rows: tens of MiB read from the file, all still held.
    expect(cached).toBeGreaterThan(16 * 2 ** 20);
    await evictCachedBlocks(b);
    const left = await baseTableBytes(a);
    expect(left).toBeLessThan(cached / 2);
    expect(await limitOf(a)).toBe('256.0 MiB');
    // The table reads the same afterwards (from the file again).
    expect((await a.runAndReadAll(`SELECT count(*)::INTEGER FROM t`)).getRows()[0]![0]).toBe(2_997_000);
  });

  it("leaves another connection's open transaction usable (why the sync evicts through a second connection)", async () => {
    await a.run('BEGIN TRANSACTION');
    await a.runAndReadAll(`SELECT sum(h) FROM t`);
    await evictCachedBlocks(b);
    await a.run(`CREATE TEMP TABLE kept AS SELECT 1 AS x`);
    await a.run('COMMIT');
    // On the transaction's own connection, DuckDB's refusal of the 1 MiB limit aborts the transaction.
    await a.run('BEGIN TRANSACTION');
    await a.runAndReadAll(`SELECT sum(h) FROM t`);
    await expect(evictCachedBlocks(a)).rejects.toThrow(/transaction is aborted/i);
    await a.run('ROLLBACK');
  });
});

describe('a sync loading its known lines', () => {
  let tmp: ReturnType<typeof tempDir>;
  let server: RawServer;
  const lines = Array.from({ length: 3000 }, (_, i) =>
    JSON.stringify({
      id: `R${i}`,
      status: 'SUBMITTED',
      destination: 'ROAD_CONTROL',
      createdAt: '2024-01-01T00:00:00.000Z',
      updatedAt: `2024-01-02T00:00:${String(i % 60).padStart(2, '0')}.000Z`,
    }),
  );

  beforeEach(async () => {
    tmp = tempDir();
    server = await startRawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(`${lines.join('\n')}\n`);
    });
  });
  afterEach(async () => {
    await server.close();
    tmp.cleanup();
  });

  it('builds the same set when the blocks are evicted after each slice, within its transaction', async () => {
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    const c = await warehouse.connect();
    const side = await warehouse.connect();
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      const plain = await loadKnownLines(c, ndjsonSource.name, true);
      let evictions = 0;
      const evicted = await loadKnownLines(c, ndjsonSource.name, true, async () => {
        evictions++;
        await evictCachedBlocks(side);
      });
      // One slice of rows, visited by each of the set's two passes.
      expect(evictions).toBe(2);
      expect(evicted.size).toBe(3000);
      expect(plain.size).toBe(3000);
      for (const l of lines) expect(evicted.check(l).known).toBe(true);
      for (const l of lines) expect(plain.check(l).known).toBe(true);
      expect(evicted.check(lines[0]!.replace('R0', 'R-new')).known).toBe(false);
    } finally {
      c.closeSync();
      side.closeSync();
      warehouse.close();
    }
  });
  it('runs the eviction only when the sync reads with a lowered limit (the daemon, whose reader shares the instance, reads at the full one)', async () => {
    const calls: Record<string, number> = {};
    for (const [name, read] of [
      ['cli', '128MiB'],
      ['daemon', '512MiB'],
    ] as const) {
      const config = testConfig(server.url, join(tmp.dir, `${name}.duckdb`), {
        duckdbMemoryLimit: '512MiB',
        duckdbReadMemoryLimit: read,
      });
      const warehouse = await openTestWarehouse(config);
      const dispatcher = createHttpAgent(config);
      calls[name] = 0;
      try {
        for (let run = 0; run < 2; run++) {
          const connection = await warehouse.connect();
          try {
            const summary = await runSync({
              connection,
              config,
              dispatcher,
              logger: silentLogger(),
              source: ndjsonSource,
              evictCache: async () => {
                calls[name]!++;
              },
            });
            expect(summary.status).toBe('succeeded');
          } finally {
            connection.closeSync();
          }
        }
      } finally {
        await dispatcher.close();
        warehouse.close();
      }
    }
    // The first run finds no current report; the second loads one slice in each of the set's two passes.
    // Each run's merge evicts once more, after its commit and before its checkpoint.
    expect(calls).toEqual({ cli: 4, daemon: 0 });
  });
  it('records a failure while the known lines load on the run row, and the next run starts clean', async () => {
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), {
      duckdbMemoryLimit: '512MiB',
      duckdbReadMemoryLimit: '128MiB',
    });
    const warehouse = await openTestWarehouse(config);
    const dispatcher = createHttpAgent(config);
    const runOnce = async (evictCache?: () => Promise<void>) => {
      const connection = await warehouse.connect();
      try {
        return await runSync({
          connection,
          config,
          dispatcher,
          logger: silentLogger(),
          source: ndjsonSource,
          evictCache,
        });
      } finally {
        connection.closeSync();
      }
    };
    try {
      expect((await runOnce()).status).toBe('succeeded');
      const failed = await runOnce(async () => {
        throw new Error('eviction failed on purpose');
      });
      expect(failed.status).toBe('failed');
      const rows = await query(
        warehouse,
        `SELECT status, error->>'message' AS message FROM sync_runs WHERE run_id = $id`,
        { id: failed.runId },
      );
      expect(rows).toEqual([
        { status: 'failed', message: expect.stringContaining('eviction failed on purpose') },
      ]);
      expect((await runOnce()).status).toBe('succeeded');
      expect(await query(warehouse, `SELECT count(*) AS n FROM sync_runs WHERE status = 'running'`)).toEqual([
        { n: 0 },
      ]);
    } finally {
      await dispatcher.close();
      warehouse.close();
    }
  });
});
