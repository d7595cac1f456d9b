import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { runSync } from '../../src/sync/run-sync.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { startTestSimulator } from '../helpers/simulator.js';
import {
  capturingLogger,
  openTestWarehouse,
  query,
  syncTargetOnce,
  tempDir,
  testConfig,
} from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** The run log and what is left staged after the run(s). */
async function runLog(warehouse: Parameters<typeof query>[0]) {
  const runs = await query(
    warehouse,
    `SELECT status, error::VARCHAR AS error FROM sync_runs ORDER BY started_at`,
  );
  const [left] = await query(
    warehouse,
    `SELECT (SELECT count(*) FROM staging_reports) + (SELECT count(*) FROM staging_seen) AS staged,
       (SELECT count(*) FROM reports) AS reports`,
  );
  return {
    runs: runs.map((r) => ({
      status: r.status,
      error: r.error === null ? null : JSON.parse(String(r.error)),
    })),
    left,
  };
}

describe('DuckDB out of memory', () => {
  it('while staging: the run ends failed with WAREHOUSE_OUT_OF_MEMORY naming the setting, and the next run starts clean', async () => {
    const sim = await startTestSimulator({ generate: { n: 30_000, seed: 3 } });
    const path = `${tmp.dir}/w.duckdb`;
    // Below what loading a batch needs (read_json's buffers alone take 32 MiB): DuckDB itself runs out.
    const tiny = testConfig(sim.url, path, { duckdbMemoryLimit: '24MiB' });
    let warehouse = await openTestWarehouse(tiny);
    try {
      const [run] = await syncTargetOnce(warehouse, tiny, 'ndjson');
      expect(run?.status).toBe('failed');
      expect(run?.error?.code).toBe('WAREHOUSE_OUT_OF_MEMORY');
      expect(run?.error?.message).toMatch(
        /ran out of memory at its limit of 24\.0 MiB while staging the export .*Set REPORTS_DUCKDB_MEMORY_LIMIT higher \(e\.g\. REPORTS_DUCKDB_MEMORY_LIMIT=48MiB\)/,
      );
      expect(run?.error?.message).toContain(`${path}.tmp`);
      const log = await runLog(warehouse);
      expect(log.runs).toMatchObject([
        {
          status: 'failed',
          error: {
            code: 'WAREHOUSE_OUT_OF_MEMORY',
            context: { setting: 'REPORTS_DUCKDB_MEMORY_LIMIT', phase: 'reading' },
          },
        },
      ]);
      expect(log.left).toEqual({ staged: 0, reports: 0 });
    } finally {
      warehouse.close();
    }
    // The operator follows the advice: the same export loads in full.
    const enough = testConfig(sim.url, path, { duckdbMemoryLimit: '48MiB' });
    warehouse = await openTestWarehouse(enough);
    try {
      const [run] = await syncTargetOnce(warehouse, enough, 'ndjson');
      expect(run?.status).toBe('succeeded');
      expect(run?.counters.inserted).toBe(30_000);
    } finally {
      warehouse.close();
    }
    // Two syncs of 30,000 reports: over a minute on 2 busy shared cores.
  }, 180_000);

  it('while merging: the run is recorded failed with the code and advice, nothing of it merged', async () => {
    const sim = await startTestSimulator({ generate: { n: 30_000, seed: 4 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    const connection = await warehouse.connect();
    const dispatcher = createHttpAgent(config);
    const { logger, lines } = await capturingLogger();
    try {
      const run = await runSync({
        connection,
        config,
        dispatcher,
        logger,
        source: ndjsonSource,
        // Read with the default limit, then merge with one far too small for 30,000 inserts.
        beforeMerge: async () => {
          await connection.run(`SET memory_limit = '8MiB'`);
        },
      });
      await connection.run(`SET memory_limit = '256MiB'`);
      expect(run.status).toBe('failed');
      expect(run.error?.code).toBe('WAREHOUSE_OUT_OF_MEMORY');
      expect(run.error?.message).toMatch(
        /at its limit of 8\.0 MiB while merging the run .*Set REPORTS_DUCKDB_MEMORY_LIMIT higher/,
      );
      const log = await runLog(warehouse);
      expect(log.runs).toMatchObject([
        { status: 'failed', error: { code: 'WAREHOUSE_OUT_OF_MEMORY', context: { phase: 'merging' } } },
      ]);
      expect(log.left).toEqual({ staged: 0, reports: 0 });
      // The log says what held DuckDB's memory when it ran out (the merge's staged rows and temp tables).
      const memory = lines.find((l) => l.msg === 'DuckDB memory at the failure')?.duckdbMemory;
      expect(Object.keys(memory as object).length).toBeGreaterThan(0);
    } finally {
      connection.closeSync();
      await dispatcher.close();
      warehouse.close();
    }
  });
});
