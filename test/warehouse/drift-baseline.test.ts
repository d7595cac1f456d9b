import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/warehouse/migrate.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('drift baseline of an upgraded warehouse (the freshness migration)', () => {
  it('starts from the values and fields the warehouse holds, so the next run reports no drift', async () => {
    const sim = await startTestSimulator({ generate: { n: 200, seed: 6 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { conditionalExports: false });
    const warehouse = await openTestWarehouse(config);
    try {
      expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
      // Back to the schema before the freshness migration, as a warehouse of the previous version is.
      const c = await warehouse.connect();
      try {
        await c.run(`DROP TABLE drift_catalog; DROP TABLE drift_events;
          ALTER TABLE sync_runs DROP COLUMN not_modified; ALTER TABLE sync_runs DROP COLUMN outcome;
          DELETE FROM schema_migrations WHERE version = 9`);
        expect(await migrate(c)).toEqual([9]);
      } finally {
        c.closeSync();
      }
      const catalog = await query(
        warehouse,
        `SELECT kind, format, field, value FROM drift_catalog ORDER BY kind, field, value`,
      );
      const statuses = await query(warehouse, `SELECT DISTINCT status FROM reports ORDER BY 1`);
      expect(catalog.filter((r) => r.field === 'status').map((r) => r.value)).toEqual(
        statuses.map((r) => r.status),
      );
      expect(catalog.filter((r) => r.kind === 'field')).toEqual([
        { kind: 'field', format: 'json', field: 'channel', value: 'string' },
        { kind: 'field', format: 'json', field: 'district', value: 'string' },
      ]);
      // Reports changed by a day, with nothing new in kind: no drift.
      sim.advanceDays(1);
      const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(run?.counters.updated).toBeGreaterThan(0);
      expect(run?.drift).toEqual([]);
    } finally {
      await warehouse.close();
    }
  });
});
