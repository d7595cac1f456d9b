import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/warehouse/migrate.js';
import { reportVersionsSql } from '../../src/warehouse/versions.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const ALL_VERSIONS = 'SELECT * FROM report_versions ORDER BY id, valid_from, change';

describe('the current version kept in reports (migration 011)', () => {
  it('turns a warehouse whose versions were all stored into the same report_versions, and goes on from it', async () => {
    const sim = await startTestSimulator({ generate: { n: 400, seed: 11 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { conditionalExports: false });
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      sim.advanceDays(3);
      const [second] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(second?.counters.updated).toBeGreaterThan(0);
      expect(second?.counters.removed).toBeGreaterThan(0);
      const before = await query(warehouse, ALL_VERSIONS);

      // Back to the schema before the migration: every version, the current ones included, in one table.
      const c = await warehouse.connect();
      try {
        // Migration 020 undone first: reports the table again.
        await c.run(`DROP VIEW reports; DROP VIEW current_reports;
          ALTER TABLE report_rows RENAME TO reports;
          ALTER TABLE reports DROP COLUMN csv_line_hash; ALTER TABLE reports DROP COLUMN unseen_since;
          ALTER TABLE sync_runs DROP COLUMN seen_all_at; ALTER TABLE sync_runs DROP COLUMN merged_at;
          CREATE VIEW current_reports AS
          SELECT id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra
          FROM reports WHERE removed_at IS NULL;
          CREATE OR REPLACE VIEW report_versions AS
          ${reportVersionsSql({ hashes: true }).replace('FROM report_rows', 'FROM reports')};
          DELETE FROM schema_migrations WHERE version = 20`);
        await c.run(`CREATE TABLE stored_versions AS SELECT * FROM report_versions;
          DROP VIEW report_history; DROP VIEW report_versions; DROP TABLE report_versions_closed;
          ALTER TABLE stored_versions RENAME TO report_versions;
          ALTER TABLE reports DROP COLUMN version_change; ALTER TABLE reports DROP COLUMN version_run_id;
          CREATE VIEW report_history AS
          SELECT id, valid_from, valid_to, valid_to IS NULL AS is_current, change, status, destination,
            category, description, lat, lng, address, created_at, updated_at, extra, run_id
          FROM report_versions;
          DELETE FROM schema_migrations WHERE version = 11`);
        expect(await migrate(c)).toEqual([11, 20]);
      } finally {
        c.closeSync();
      }
      expect(await query(warehouse, ALL_VERSIONS)).toEqual(before);
      // The query publish.ts defines the view with again (without hashes in the copy) is the migration's.
      const republished = `SELECT * FROM (${reportVersionsSql({ hashes: true })}) ORDER BY id, valid_from, change`;
      expect(await query(warehouse, republished)).toEqual(before);
      const [closed] = await query(warehouse, 'SELECT count(*) AS n FROM report_versions_closed');
      expect(Number(closed?.n)).toBe(before.filter((v) => v.valid_to !== null).length);

      sim.advanceDays(2);
      const [third] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(third?.counters.updated).toBeGreaterThan(0);
      // One open version per report, holding the report's row; closed versions end after they start.
      const open = await query(
        warehouse,
        `SELECT count(*) AS reports,
           count(*) FILTER (WHERE v.n = 1 AND v.content_hash = r.content_hash
             AND (r.removed_at IS NULL) = (v.change <> 'remove')) AS matching
         FROM reports r LEFT JOIN (SELECT id, count(*) AS n, any_value(content_hash) AS content_hash,
           any_value(change) AS change FROM report_versions WHERE valid_to IS NULL GROUP BY id) v USING (id)`,
      );
      expect(Number(open[0]?.reports)).toBeGreaterThan(400);
      expect(open[0]?.matching).toBe(open[0]?.reports);
      const [bad] = await query(
        warehouse,
        'SELECT count(*) AS n FROM report_versions WHERE valid_to IS NOT NULL AND valid_to <= valid_from',
      );
      expect(Number(bad?.n)).toBe(0);
      const [{ n: versions } = {}] = await query(warehouse, 'SELECT count(*) AS n FROM report_versions');
      // One version per update, insert, revive and tombstone of the run.
      const made = ['updated', 'inserted', 'revived', 'removed'] as const;
      const added = made.reduce((sum, k) => sum + Number(third?.counters[k] ?? 0), 0);
      expect(Number(versions)).toBe(before.length + added);
    } finally {
      warehouse.close();
    }
  });
});
