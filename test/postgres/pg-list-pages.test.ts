import fc from 'fast-check';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PgListPages } from '../../src/reader/postgres/pg-list-pages.js';
import { PgReaderPool } from '../../src/reader/postgres/pg-pool.js';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('list pages on PostgreSQL by keyset seeks from anchors', () => {
  it('give, at any depth and for any filter, the rows of ORDER BY created_at DESC, id LIMIT … OFFSET …, also after the data changes under a new published state', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({ generate: { n: 500, seed: 5 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      await publishToPostgres(warehouse, db);
    } finally {
      warehouse.close();
    }
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`SET search_path TO ${db.schema}`);
      // Ties on created_at, so the order by id (byte order, whatever the collation) is exercised.
      await client.query(
        `UPDATE report_rows SET created_at = '2024-01-01T00:00:00Z' WHERE id IN (SELECT id FROM report_rows ORDER BY id LIMIT 40)`,
      );
      const statuses = (await client.query<{ s: string }>('SELECT DISTINCT status AS s FROM report_rows'))
        .rows;
      const destinations = (
        await client.query<{ d: string }>('SELECT DISTINCT destination AS d FROM report_rows')
      ).rows;
      const reference = async (
        filter: { status?: string; destination?: string },
        offset: number,
        limit: number,
      ) => {
        const res = await client.query<{ id: string }>(
          `SELECT id FROM report_rows WHERE removed_at IS NULL
             AND ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR destination = $2)
           ORDER BY created_at DESC, id COLLATE "C" LIMIT $3 OFFSET $4`,
          [filter.status ?? null, filter.destination ?? null, limit, offset],
        );
        return res.rows.map((r) => r.id);
      };
      const pages = new PgListPages(db.schema, { every: 7, minExtension: 1 });
      const query = fc.record({
        status: fc.option(fc.constantFrom(...statuses.map((r) => r.s)), { nil: undefined }),
        destination: fc.option(fc.constantFrom(...destinations.map((r) => r.d)), { nil: undefined }),
        pageSize: fc.integer({ min: 1, max: 60 }),
        page: fc.integer({ min: 1, max: 90 }),
      });
      const check = async (q: { status?: string; destination?: string; pageSize: number; page: number }) => {
        const filter = { status: q.status, destination: q.destination };
        const got = await pages.page(client, filter, q.page, q.pageSize);
        expect(got.reports.map((r) => r.id)).toEqual(
          await reference(filter, (q.page - 1) * q.pageSize, q.pageSize),
        );
        return got.state;
      };
      await fc.assert(
        fc.asyncProperty(query, async (q) => void (await check(q))),
        { numRuns: 150 },
      );
      // A publish changes rows and the state: the anchors of the previous state are not used.
      await client.query(
        `UPDATE report_rows SET removed_at = now() WHERE id IN (SELECT id FROM report_rows ORDER BY id DESC LIMIT 60)`,
      );
      await client.query(
        `UPDATE publish_state SET last_run_id = 'another-run', published_at = now(),
           served_run_id = 'another-run', served_at = now()`,
      );
      await fc.assert(
        fc.asyncProperty(query, async (q) => {
          expect((await check(q)).lastRunId).toBe('another-run');
        }),
        { numRuns: 150 },
      );
    } finally {
      await client.end();
    }
  });

  it('are read on connections with generic plans and no JIT, which a page query needs to stay under a millisecond', async (ctx) => {
    const db = await postgres.database(ctx);
    const pool = new PgReaderPool({ url: db.url, size: 2, acquireTimeoutMs: 5_000, queryTimeoutMs: 5_000 });
    try {
      const settings = await pool.use(
        async (c) =>
          (
            await c.query<{ jit: string; mode: string }>(
              `SELECT current_setting('jit') AS jit, current_setting('plan_cache_mode') AS mode`,
            )
          ).rows[0],
      );
      expect(settings).toEqual({ jit: 'off', mode: 'force_generic_plan' });
    } finally {
      await pool.close();
    }
  });
});
