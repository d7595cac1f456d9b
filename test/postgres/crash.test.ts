import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { COMPARED, duckRows, holdsNul, pgQuery, pgRows } from '../helpers/pg-parity.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();
let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** Every compared relation of PostgreSQL, as rows. */
async function pgState(db: { url: string; schema: string }) {
  return Promise.all(Object.keys(COMPARED).map((r) => pgRows(db.url, db.schema, r)));
}

async function expectParity(path: string, sim: TestSimulator, db: { url: string; schema: string }) {
  const warehouse = await openTestWarehouse(testConfig(sim.url, path));
  try {
    for (const relation of Object.keys(COMPARED)) {
      const expected = (await duckRows(warehouse, relation)).filter((r) => !holdsNul(r));
      expect(await pgRows(db.url, db.schema, relation), relation).toEqual(expected);
    }
  } finally {
    warehouse.close();
  }
}

/** A warehouse synced once and published, then a day later synced again (not yet published). */
async function publishedThenChanged(db: { url: string; schema: string }) {
  const sim = await startTestSimulator({ generate: { n: 300, seed: 21 } });
  const path = `${tmp.dir}/w.duckdb`;
  const env = { REPORTS_BASE_URL: sim.url, REPORTS_WAREHOUSE: path, REPORTS_POSTGRES_SCHEMA: db.schema };
  const first = await runCli(['sync', '--source', 'ndjson', '--postgres', db.url], env);
  expect(first.code, first.stderr).toBe(0);
  await fetch(`${sim.url}/__admin/advance?days=2`, { method: 'POST' });
  const second = await runCli(['sync', '--source', 'ndjson'], env);
  expect(second.code, second.stderr).toBe(0);
  return { sim, path, env };
}

describe('a publish to PostgreSQL cut midway', () => {
  it('killed (SIGKILL) before its commit leaves PostgreSQL at the previous publish; the next one converges', async (ctx) => {
    const db = await postgres.database(ctx);
    const { sim, path, env } = await publishedThenChanged(db);
    const before = await pgState(db);
    const [state] = await pgQuery(db.url, db.schema, 'SELECT last_run_id, watermark FROM publish_state');
    const proc = spawnCli(['publish-postgres', '--postgres', db.url], {
      ...env,
      REPORTS_FAILPOINT: 'postgres-applied',
    });
    await proc.waitFor(/failpoint postgres-applied reached/);
    proc.child.kill('SIGKILL');
    await proc.exited;
    expect(await pgState(db)).toEqual(before);
    expect(await pgQuery(db.url, db.schema, 'SELECT last_run_id, watermark FROM publish_state')).toEqual([
      state,
    ]);

    const next = await runCli(['publish-postgres', '--postgres', db.url], env);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toContain('the changes since the last publish applied');
    await expectParity(path, sim, db);
  });

  it('with the server stopped mid-publish fails (exit 1); once it is back the next publish converges', async (ctx) => {
    const db = await postgres.database(ctx);
    if (!postgres.server()?.stop || !postgres.server()?.start)
      return ctx.skip("the server is not the suite's own (REPORTS_TEST_POSTGRES_URL)");
    const { sim, path, env } = await publishedThenChanged(db);
    const before = await pgState(db);
    const proc = spawnCli(['publish-postgres', '--postgres', db.url], {
      ...env,
      REPORTS_FAILPOINT: 'postgres-applied@2000',
    });
    await proc.waitFor(/failpoint postgres-applied reached/);
    postgres.server()!.stop!();
    const { code } = await proc.exited;
    postgres.server()!.start!();
    expect(code).toBe(1);
    expect(proc.output().stderr).toContain('publish to PostgreSQL failed');
    expect(await pgState(db)).toEqual(before);

    const next = await runCli(['publish-postgres', '--postgres', db.url], env);
    expect(next.code, next.stderr).toBe(0);
    await expectParity(path, sim, db);
  });

  it('a PostgreSQL that is down never fails the sync, its password never shows, and the next sync catches up', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({ generate: { n: 100, seed: 2 } });
    const path = `${tmp.dir}/w.duckdb`;
    const env = { REPORTS_BASE_URL: sim.url, REPORTS_WAREHOUSE: path, REPORTS_POSTGRES_SCHEMA: db.schema };
    const down = await runCli(['sync', '--source', 'ndjson'], {
      ...env,
      REPORTS_POSTGRES_URL: 'postgres://reader:hunter2secret@127.0.0.1:1/reports',
    });
    expect(down.code, down.stderr).toBe(0);
    expect(down.stderr).toContain('not published to PostgreSQL');
    expect(down.stderr).not.toContain('hunter2secret');
    expect(down.stdout).not.toContain('hunter2secret');

    // Nothing new upstream: the sync changes nothing, yet the first publish of this process copies all.
    const up = await runCli(['sync', '--source', 'ndjson', '--postgres', db.url], env);
    expect(up.code, up.stderr).toBe(0);
    await expectParity(path, sim, db);
  });
});
