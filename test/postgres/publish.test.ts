import { beforeEach, afterEach, describe, expect, it } from 'vitest';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { resetData } from '../../src/warehouse/data-tables.js';
import { COMPARED, duckRows, holdsNul, pgQuery, pgRows } from '../helpers/pg-parity.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** Every compared relation holds the same rows in PostgreSQL as in DuckDB (rows with U+0000 excepted). */
async function expectParity(warehouse: Warehouse, db: { url: string; schema: string }) {
  for (const relation of Object.keys(COMPARED)) {
    const expected = (await duckRows(warehouse, relation)).filter((r) => !holdsNul(r));
    expect(await pgRows(db.url, db.schema, relation), relation).toEqual(expected);
  }
}

describe('publishing the warehouse to PostgreSQL', () => {
  it('after NDJSON, CSV and recent runs over simulated days, every business column equals DuckDB, versions included', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({
      generate: { n: 400, seed: 11 },
      faults: ['ndjson:malformed,every=97'],
    });
    const path = `${tmp.dir}/w.duckdb`;
    const config = testConfig(sim.url, path, { csvPageSize: 150 });
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'default');
      const first = await publishToPostgres(warehouse, db);
      expect(first.mode).toBe('full');
      expect(first.tables.report_rows?.rows).toBe(400);
      expect(first.tables.rejected_records?.rows).toBeGreaterThan(0);
      // The reader's indexes are there after the first publish (built once its rows were copied).
      const indexes = await pgQuery<{ indexname: string }>(
        db.url,
        db.schema,
        `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'report_rows' ORDER BY 1`,
        [db.schema],
      );
      expect(indexes.map((i) => i.indexname)).toEqual([
        'report_rows_export',
        'report_rows_list',
        'report_rows_list_both',
        'report_rows_list_destination',
        'report_rows_list_status',
        'report_rows_pkey',
      ]);
      await expectParity(warehouse, db);
      // Rows copied in bulk are vacuumed at once: index-only scans need not visit the table for each.
      expect(first.vacuumed).toBe(true);
      const vacuumed = await pgQuery<{ relname: string }>(
        db.url,
        db.schema,
        `SELECT relname FROM pg_stat_user_tables WHERE schemaname = $1 AND last_vacuum IS NOT NULL`,
        [db.schema],
      );
      expect(vacuumed.map((t) => t.relname)).toContain('report_rows');

      const advanced = (await (
        await fetch(`${sim.url}/__admin/advance?days=2`, { method: 'POST' })
      ).json()) as {
        moved: number;
        added: number;
        unpublished: number;
      };
      expect(advanced.moved).toBeGreaterThan(0);
      expect(advanced.unpublished).toBeGreaterThan(0);
      const [csv] = await syncTargetOnce(warehouse, config, 'csv');
      expect(csv?.counters.removed).toBe(advanced.unpublished);
      const second = await publishToPostgres(warehouse, db);
      expect(second.mode).toBe('changes');
      expect(second.vacuumed).toBeUndefined();
      const changed = csv!.counters.inserted + csv!.counters.updated + csv!.counters.removed;
      expect(second.tables.report_rows?.rows).toBeGreaterThanOrEqual(changed);
      expect(second.tables.report_rows?.rows).toBeLessThan(400);
      await expectParity(warehouse, db);

      await fetch(`${sim.url}/__admin/advance?days=1`, { method: 'POST' });
      await syncTargetOnce(warehouse, config, 'recent');
      expect((await publishToPostgres(warehouse, db)).mode).toBe('changes');
      await expectParity(warehouse, db);
      await syncTargetOnce(warehouse, config, 'default');
      expect((await publishToPostgres(warehouse, db)).mode).toBe('changes');
      await expectParity(warehouse, db);
      const removed = await pgQuery<{ n: string }>(
        db.url,
        db.schema,
        `SELECT count(*) AS n FROM reports WHERE removed_at IS NOT NULL`,
      );
      expect(Number(removed[0]?.n)).toBeGreaterThan(0);
    } finally {
      warehouse.close();
    }
  });

  it('applying the same change set again changes nothing, and a publish with nothing new moves no report', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({ generate: { n: 200, seed: 3 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      await publishToPostgres(warehouse, db);
      await fetch(`${sim.url}/__admin/advance?days=1`, { method: 'POST' });
      await syncTargetOnce(warehouse, config, 'ndjson');
      // The change set applied, then the bookkeeping put back as if the commit had been lost: applied twice.
      const [before] = await pgQuery<Record<string, unknown>>(
        db.url,
        db.schema,
        `SELECT * FROM publish_state`,
      );
      const once = await publishToPostgres(warehouse, db);
      expect(once.mode).toBe('changes');
      const snapshot = await Promise.all(Object.keys(COMPARED).map((r) => pgRows(db.url, db.schema, r)));
      await pgQuery(
        db.url,
        db.schema,
        `UPDATE publish_state SET watermark = $1, runs_started_max = $2, last_run_id = $3`,
        [before!.watermark, before!.runs_started_max, before!.last_run_id],
      );
      const twice = await publishToPostgres(warehouse, db);
      expect(twice.mode).toBe('changes');
      expect(twice.tables).toEqual(once.tables);
      expect(await Promise.all(Object.keys(COMPARED).map((r) => pgRows(db.url, db.schema, r)))).toEqual(
        snapshot,
      );

      const again = await publishToPostgres(warehouse, db);
      expect(again.mode).toBe('changes');
      expect(again.tables.report_rows?.rows).toBe(0);
      expect(again.tables.report_versions_closed?.rows).toBe(0);
      await expectParity(warehouse, db);
    } finally {
      warehouse.close();
    }
  });

  it('after a reset (every report deleted in DuckDB) the next publish copies every table', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({ generate: { n: 150, seed: 8 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      await publishToPostgres(warehouse, db);
      const c = await warehouse.connect();
      await resetData(c);
      c.closeSync();
      const afterReset = await publishToPostgres(warehouse, db);
      expect(afterReset.mode).toBe('full');
      expect(afterReset.fullReason).toBe('a reset since the last publish');
      await expectParity(warehouse, db);
      await syncTargetOnce(warehouse, config, 'ndjson');
      expect((await publishToPostgres(warehouse, db)).mode).toBe('changes');
      await expectParity(warehouse, db);
    } finally {
      warehouse.close();
    }
  });
});
