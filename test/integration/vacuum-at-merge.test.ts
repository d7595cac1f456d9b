import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync, statSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/sync/run-sync.js';
import type { ExportSource } from '../../src/sync/export-source.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { recentSource } from '../../src/sync/sources/recent-source.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { silentLogger } from '../../src/util/logger.js';
import { storedRows, VACUUM_DELETED_SHARE } from '../../src/warehouse/vacuum-policy.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const walBytes = (path: string) => (existsSync(`${path}.wal`) ? statSync(`${path}.wal`).size : 0);
const vacuumTasks = async (c: DuckDBConnection) =>
  Number((await c.runAndReadAll(`SELECT current_setting('max_vacuum_tasks')::BIGINT`)).getRows()[0]![0]);

describe("the vacuum at a merge's commit", () => {
  it('runs at a full export, is left by a `recent` run to the next full export, unless an eighth of the stored rows are deleted', async () => {
    const sim = await startTestSimulator({ generate: { n: 3000, seed: 5 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { recentPageSize: 100 });
    const warehouse = await openTestWarehouse(config);
    const connection = await warehouse.connect();
    const lookup = await warehouse.connect();
    const dispatcher = createHttpAgent(config);
    // DuckDB's setting inside the merge's transaction, read by the run's own `afterMerge` hook.
    const atCommit = async (source: ExportSource) => {
      let tasks: number | undefined;
      const run = await runSync({
        connection,
        config,
        dispatcher,
        logger: silentLogger(),
        source,
        afterMerge: async (ctx) => {
          tasks = await vacuumTasks(ctx.connection);
        },
      });
      expect(run.status).toBe('succeeded');
      return tasks;
    };
    try {
      const vacuumOn = await vacuumTasks(connection);
      expect(vacuumOn).toBeGreaterThan(0);
      expect(await atCommit(ndjsonSource)).toBe(vacuumOn);

      sim.advanceDays(1);
      expect(await atCommit(recentSource(lookup))).toBe(0);
      expect(await vacuumTasks(connection)).toBe(vacuumOn);
      // Checkpointed without the vacuum: closing the warehouse has nothing left to vacuum at.
      expect(walBytes(config.warehouse)).toBe(0);
      expect(await atCommit(ndjsonSource)).toBe(vacuumOn);

      // A fifth of the reports stored again as they are: their old rows deleted, not yet vacuumed.
      await connection.run('BEGIN TRANSACTION');
      await connection.run('CREATE TEMP TABLE again AS SELECT * FROM report_rows WHERE hash(id) % 5 = 0');
      await connection.run('DELETE FROM report_rows WHERE hash(id) % 5 = 0');
      await connection.run('INSERT INTO report_rows SELECT * FROM again');
      await connection.run('COMMIT');
      const { stored, deleted } = await storedRows(connection);
      expect(deleted).toBeGreaterThanOrEqual(stored * VACUUM_DELETED_SHARE);

      sim.advanceDays(1);
      expect(await atCommit(recentSource(lookup))).toBe(vacuumOn);
    } finally {
      lookup.closeSync();
      connection.closeSync();
      await dispatcher.close();
      warehouse.close();
    }
  });
});
