import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { pgQuery } from '../helpers/pg-parity.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestPgReader, startTestReader } from '../helpers/reader.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// PostgreSQL as a DBA may have set it up: the answers and the publish do not depend on the database's or
// the role's defaults, nor on how long a refused row's key is (docs/deployment.md).

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const line = (id: string, createdAt: string, lat: number, lng: number, extras = '') =>
  `${JSON.stringify({ id, status: 'SUBMITTED', destination: 'ROAD_CONTROL', location: { lat, lng }, createdAt, updatedAt: createdAt }).slice(0, -1)}${extras}}`;

/** A warehouse synced from each export of `exports` in turn (NDJSON lines), by the simulator. */
async function warehouseOf(...exports: string[][]) {
  let config = testConfig('http://127.0.0.1:9', `${tmp.dir}/w.duckdb`, { readerCacheBytes: 0 });
  const warehouse = await openTestWarehouse(config);
  for (const [i, lines] of exports.entries()) {
    const file = `${tmp.dir}/export-${i}.ndjson`;
    writeFileSync(file, `${lines.join('\n')}\n`);
    const sim = await startTestSimulator({ dataset: await loadDataset(file) });
    config = { ...config, baseUrl: sim.url };
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('succeeded');
  }
  return { config, warehouse };
}

describe('PostgreSQL set up otherwise', () => {
  it('serves what the DuckDB reader serves whatever extra_float_digits, DateStyle and TimeZone default to', async (ctx) => {
    const db = await postgres.database(ctx);
    const name = new URL(db.url).pathname.slice(1);
    // Reports created before 1883, when New York's zone was local mean time (`LMT`), with coordinates
    // that 15 significant digits would round.
    const lines = Array.from({ length: 7 }, (_, i) =>
      line(
        `r${i}`,
        new Date(Date.UTC(1850, 0, 1, i)).toISOString(),
        i % 2 ? 0.30000000000000004 : 89.99999999999999,
        -179.99999999999997,
      ),
    );
    const { config, warehouse } = await warehouseOf(lines);
    try {
      await publishToPostgres(warehouse, db);
      await pgQuery(
        db.url,
        db.schema,
        `ALTER DATABASE "${name}" SET extra_float_digits = 0; ALTER DATABASE "${name}" SET DateStyle = 'SQL, DMY';
         ALTER DATABASE "${name}" SET TimeZone = 'America/New_York'`,
      );
      const duck = await startTestReader(warehouse, config);
      const pg = await startTestPgReader(db, config);
      try {
        for (const path of [
          '/reports?pageSize=3',
          '/reports?pageSize=3&page=2',
          '/reports?pageSize=3&page=3',
          '/reports.geojson',
          '/reports.ndjson',
          '/reports.csv',
        ]) {
          const [a, b] = await Promise.all([fetch(duck.api(path)), fetch(pg.api(path))]);
          expect([path, b.status]).toEqual([path, 200]);
          expect([path, await b.text()]).toEqual([path, await a.text()]);
        }
      } finally {
        await pg.close();
        await duck.close();
      }
    } finally {
      warehouse.close();
    }
  });

  it('publishes around a refused row whose key is longer than an index entry holds', async (ctx) => {
    const db = await postgres.database(ctx);
    // An unknown field named by 4,000 characters and a NUL: its drift event cannot be stored in PostgreSQL.
    const key = `${randomBytes(3000).toString('base64')}\\u0000`;
    const before = Array.from({ length: 5 }, (_, i) => line(`r${i}`, '2024-01-01T00:00:00.000Z', 1, 2));
    const after = [...before, line('long-key', '2024-01-01T00:00:00.000Z', 1, 2, `,"${key}":1`)];
    // The field arrives on the second run: a drift event names it.
    const { warehouse } = await warehouseOf(before, after);
    try {
      for (const full of [false, true]) {
        const published = await publishToPostgres(warehouse, { ...db, full });
        expect(published.tables.report_rows?.refused).toBe(1);
      }
      const stored = await pgQuery(db.url, db.schema, `SELECT count(*)::int AS n FROM report_rows`);
      expect(stored).toEqual([{ n: 5 }]);
      const refused = await pgQuery<{ table_name: string; n: number }>(
        db.url,
        db.schema,
        `SELECT table_name, count(*)::int AS n FROM publish_refused GROUP BY 1 ORDER BY 1`,
      );
      expect(refused).toContainEqual({ table_name: 'report_rows', n: 1 });
      expect(refused.map((r) => r.table_name)).toContain('drift_events');
    } finally {
      warehouse.close();
    }
  });
});
