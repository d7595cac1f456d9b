import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestPgReader, startTestReader } from '../helpers/reader.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

// The PostgreSQL reader's validators: `ETag` the last applied run that changed the reports, `Last-Modified`
// when it finished, as on the DuckDB reader. They move together: a publish that brings no run, a `/stats`
// snapshot or a run that changed nothing changes neither, so a poller gets its 304.
/** A simulator of 100 reports, a PostgreSQL database and a warehouse publishing to it (validators read fresh). */
async function world(ctx: Parameters<typeof postgres.database>[0], seed: number) {
  const db = await postgres.database(ctx);
  const sim = await startTestSimulator({ generate: { n: 100, seed } });
  const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, {
    postgresUrl: db.url,
    postgresSchema: db.schema,
    readerValidatorsTtlMs: 0,
  });
  const warehouse = await openTestWarehouse(config);
  onTestFinished(() => warehouse.close());
  return { db, sim, config, warehouse };
}

describe('the PostgreSQL reader’s Last-Modified', () => {
  it('stays with its ETag across a publish that brings no run, and both move with the next run', async (ctx) => {
    const { db, sim, config, warehouse } = await world(ctx, 21);
    expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
    await publishToPostgres(warehouse, db);
    const reader = await startTestPgReader(db, config);
    onTestFinished(() => reader.close());
    const validators = async () => {
      const res = await fetch(reader.api('/reports?pageSize=5'));
      await res.arrayBuffer();
      return { etag: res.headers.get('etag'), lastModified: res.headers.get('last-modified') };
    };
    const first = await validators();
    expect(first.lastModified).not.toBeNull();

    await new Promise((resolve) => setTimeout(resolve, 1_100)); // Last-Modified has whole seconds
    await publishToPostgres(warehouse, db); // nothing new
    expect(await validators()).toEqual(first);
    const polled = await fetch(reader.api('/reports?pageSize=5'), {
      headers: { 'if-modified-since': first.lastModified! },
    });
    expect(polled.status).toBe(304);

    sim.advanceDays(1);
    expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
    await publishToPostgres(warehouse, db);
    const next = await validators();
    expect(next.etag).not.toBe(first.etag);
    expect(next.lastModified).not.toBe(first.lastModified);
  });

  it('a /stats snapshot and runs that changed nothing keep them, as the DuckDB reader does', async (ctx) => {
    const { db, sim, config, warehouse } = await world(ctx, 22);
    const run = async (target: 'ndjson' | 'stats' | 'recent') => {
      expect((await syncTargetOnce(warehouse, config, target))[0]?.status).toBe('succeeded');
      await publishToPostgres(warehouse, db);
    };
    await run('ndjson');
    const pg = await startTestPgReader(db, config);
    onTestFinished(() => pg.close());
    const duck = await startTestReader(warehouse, config);
    onTestFinished(() => duck.close());
    const validators = async (reader: { api: (path: string) => string }) => {
      const res = await fetch(reader.api('/reports.csv?pageSize=5'));
      await res.arrayBuffer();
      return { etag: res.headers.get('etag'), lastModified: res.headers.get('last-modified') };
    };
    const first = await validators(pg);
    expect(first).toEqual(await validators(duck));

    await new Promise((resolve) => setTimeout(resolve, 1_100)); // Last-Modified has whole seconds
    for (const target of ['stats', 'ndjson', 'recent'] as const) {
      await run(target); // a snapshot, an export answered 304, a list page the warehouse holds
      expect(await validators(pg), target).toEqual(first);
      const polled = await fetch(pg.api('/reports.csv?pageSize=5'), {
        headers: { 'if-none-match': first.etag! },
      });
      expect(polled.status, target).toBe(304);
    }

    sim.advanceDays(1);
    await run('ndjson');
    const next = await validators(pg);
    expect(next.etag).not.toBe(first.etag);
    expect(next).toEqual(await validators(duck));
  });
});
