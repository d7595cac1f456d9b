import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { postgresLag } from '../../src/alerts/postgres-lag.js';
import { readStatus, renderStatus } from '../../src/cli/status-report.js';
import { registerDaemonMetrics } from '../../src/daemon/daemon-metrics.js';
import { silentLogger } from '../../src/util/logger.js';
import { PostgresPublisher } from '../../src/warehouse/postgres/postgres-publisher.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('the PostgreSQL publish lag', () => {
  it('status and the daemon metrics show the runs and time PostgreSQL is behind, and the last publish error until a publish catches up', async (ctx) => {
    const db = await postgres.database(ctx);
    const server = postgres.server();
    if (server?.stop === undefined || server.start === undefined) {
      ctx.skip('the server is given (REPORTS_TEST_POSTGRES_URL): it cannot be stopped here');
    }
    const sim = await startTestSimulator({ generate: { n: 200, seed: 17 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, {
      postgresUrl: db.url,
      postgresSchema: db.schema,
    });
    const status = async () => (await readStatus(config, [], 5)).postgres;
    const metrics = async () => {
      const registry = new Registry();
      const warehouse = await openTestWarehouse(config);
      try {
        const lag = await postgresLag(warehouse.path, () => warehouse.connect()).lag(Date.now());
        registerDaemonMetrics(registry, {
          jobs: [],
          timezone: 'UTC',
          running: () => undefined,
          pending: () => [],
          publishLags: () => new Map([['postgres', lag!]]),
        });
        return await registry.metrics();
      } finally {
        warehouse.close();
      }
    };
    const syncAndPublish = async (publish: boolean) => {
      const warehouse = await openTestWarehouse(config);
      try {
        await syncTargetOnce(warehouse, config, 'ndjson');
        if (publish) return await new PostgresPublisher(warehouse, config, silentLogger()).afterRuns(true);
      } finally {
        warehouse.close();
      }
      return undefined;
    };

    expect(await syncAndPublish(true)).toBeDefined();
    const caughtUp = await status();
    expect(caughtUp).toMatchObject({ schema: db.schema, runsBehind: 0, secondsBehind: 0, lastError: null });
    expect(caughtUp?.lastRunId).toEqual(expect.any(String));

    await fetch(`${sim.url}/__admin/advance?days=1`, { method: 'POST' });
    await syncAndPublish(false);
    const behind = await status();
    expect(behind?.runsBehind).toBe(1);
    expect(behind?.pendingSince).toEqual(expect.any(String));
    expect(await metrics()).toContain('reports_sync_publish_lag_runs{target="postgres"} 1');

    server!.stop!();
    try {
      await fetch(`${sim.url}/__admin/advance?days=1`, { method: 'POST' });
      expect(await syncAndPublish(true)).toBeUndefined();
    } finally {
      server!.start!();
    }
    const failed = await status();
    expect(failed?.runsBehind).toBe(2);
    expect(failed?.lastError).toMatch(/PostgreSQL/);
    expect(failed?.lastRunId).toBe(caughtUp?.lastRunId);
    const text = renderStatus((await readStatus(config, [], 5))!, config);
    expect(text).toMatch(/PostgreSQL \(schema \w+\): 2 runs behind/);
    expect(text).toContain('Last attempt failed');
    const scraped = await metrics();
    expect(scraped).toContain('reports_sync_publish_last_attempt_failed{target="postgres"} 1');
    expect(scraped).toContain('reports_sync_publish_lag_runs{target="postgres"} 2');

    // The next run publishes again and catches up on both.
    expect(await syncAndPublish(true)).toBeDefined();
    expect(await status()).toMatchObject({ runsBehind: 0, lastError: null });
    expect(await metrics()).toContain('reports_sync_publish_last_attempt_failed{target="postgres"} 0');
  });
});
