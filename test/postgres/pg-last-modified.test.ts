import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestPgReader } from '../helpers/reader.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

// The PostgreSQL reader's validators: `ETag` the last run applied, `Last-Modified` when it was published.
// They move together: a publish that brings no run changes neither, so a poller gets its 304.
describe('the PostgreSQL reader’s Last-Modified', () => {
  it('stays with its ETag across a publish that brings no run, and both move with the next run', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({ generate: { n: 100, seed: 21 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, {
      postgresUrl: db.url,
      postgresSchema: db.schema,
      readerValidatorsTtlMs: 0,
    });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
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
});
