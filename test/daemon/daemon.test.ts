import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveJobs, type Job } from '../../src/daemon/load-jobs.js';
import { startDaemon, type Daemon } from '../../src/daemon/start-daemon.js';
import { syncTarget } from '../../src/sync/sync-sources.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { silentLogger } from '../../src/util/logger.js';
import type { ConfigOverrides } from '../../src/config/config.js';
import { jobGauges, waitFor } from '../helpers/daemon.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, tempDir, testConfig } from '../helpers/sync.js';

/** Jobs declared in code, as files of jobs/ would declare them. */
function jobs(...list: { name: string; schedule: string; target?: string }[]): Job[] {
  return resolveJobs(
    list.map((j) => ({
      file: `${j.name}.ts`,
      declaration: { target: 'ndjson', description: j.name, ...j },
    })),
    {},
    ['ndjson'],
  );
}

const NEVER = '0 0 1 1 *'; // once a year: only the catch-up runs it during a test

// Generous timeouts: other test files and processes share the machine's two cores.
describe('reports-sync run (in process)', { timeout: 180_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: TestSimulator;
  let daemon: Daemon | undefined;
  const warehousePath = () => join(tmp.dir, 'warehouse.duckdb');
  const config = (overrides: ConfigOverrides = {}) =>
    testConfig(sim.url, warehousePath(), { port: 0, host: '127.0.0.1', ...overrides });
  const runs = () =>
    query(
      daemon!.warehouse,
      `SELECT job, status, epoch_ms(started_at) AS started, epoch_ms(finished_at) AS finished
       FROM sync_runs ORDER BY started_at`,
    );

  /** One sync recorded under `job`, before the daemon starts (as an earlier process would have). */
  const syncBefore = async (cfg: ReturnType<typeof config>, job: string) => {
    const warehouse = await openTestWarehouse(cfg);
    const dispatcher = createHttpAgent(cfg);
    try {
      const [summary] = await syncTarget({
        warehouse,
        config: cfg,
        dispatcher,
        logger: silentLogger(),
        target: 'ndjson',
        job,
      });
      expect(summary?.status).toBe('succeeded');
    } finally {
      await dispatcher.close();
      warehouse.close();
    }
  };

  beforeEach(async () => {
    tmp = tempDir();
    sim = await startTestSimulator({ generate: { n: 300, seed: 5 } });
  });
  afterEach(async () => {
    await daemon?.stop('test over');
    daemon = undefined;
    tmp.cleanup();
  });

  it('runs two jobs scheduled every second one at a time, never overlapping', async () => {
    sim.setFaults(['ndjson:latency=600']); // each run takes over half a second
    daemon = await startDaemon({
      config: config(),
      logger: silentLogger(),
      jobs: jobs({ name: 'first', schedule: '* * * * * *' }, { name: 'second', schedule: '* * * * * *' }),
    });
    await waitFor('four finished runs', async () => {
      const done = (await runs()).filter((r) => r.status === 'succeeded');
      return done.length >= 4 && new Set(done.map((r) => r.job)).size === 2;
    });
    await daemon.stop('test');
    daemon = undefined;
    // The daemon closed the warehouse: open it again, as the next process would.
    const warehouse = await openTestWarehouse(config());
    let all: Record<string, unknown>[];
    try {
      all = await query(
        warehouse,
        `SELECT job, status, epoch_ms(started_at) AS started, epoch_ms(finished_at) AS finished
         FROM sync_runs ORDER BY started_at`,
      );
    } finally {
      warehouse.close();
    }
    expect(all.length).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < all.length; i++) {
      expect(Number(all[i]!.started), `run ${i} starts after run ${i - 1} finished`).toBeGreaterThanOrEqual(
        Number(all[i - 1]!.finished),
      );
    }
    // The run cut by stop() (if one was running) is recorded as aborted, not left running.
    expect(all.every((r) => r.status === 'succeeded' || r.status === 'aborted')).toBe(true);
  });

  it('serves the reader while a sync is running (the catch-up run, stalled mid-export)', async () => {
    // A first sync before the daemon, so the reader has data; the daemon's job never ran: caught up at start.
    // Unconditional: the unchanged export must be downloaded (and stall), not answered 304.
    const cfg = config({ shutdownGraceMs: 200, conditionalExports: false });
    await syncBefore(cfg, 'earlier');
    sim.setFaults(['ndjson:stall=2000,times=1']); // the next export stalls after 2000 bytes
    const exportsBefore = sim.requests().filter((r) => r.path.includes('reports.ndjson')).length;
    daemon = await startDaemon({
      config: cfg,
      logger: silentLogger(),
      jobs: jobs({ name: 'sync-ndjson', schedule: NEVER }),
    });
    // The catch-up run is in the middle of the (stalled) export.
    await waitFor(
      'the export request',
      () => sim.requests().filter((r) => r.path.includes('reports.ndjson')).length > exportsBefore,
    );
    expect(await jobGauges(daemon.url)).toEqual({ running: ['sync-ndjson'], queued: [] });
    const health = await fetch(`${daemon.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({
      status: 'ok',
      warehouse: 'reachable',
      lastSuccessfulRun: { job: 'earlier' },
    });
    const list = await fetch(`${daemon.url}/api/v1/public/reports?pageSize=5`);
    expect(list.status).toBe(200);
    const upstream = await fetch(sim.api('/reports?pageSize=5'));
    expect(await list.json()).toEqual(await upstream.json());
    expect((await jobGauges(daemon.url)).running).toEqual(['sync-ndjson']); // still mid-sync
    expect(existsSync(join(tmp.dir, 'published', 'warehouse.duckdb'))).toBe(false);
  });

  it('runs at start a job whose last success is older than its period, not one that is fresh, then publishes', async () => {
    // Before the daemon: 'fresh' succeeded just now (its period is a year); 'stale' never ran.
    const cfg = config();
    await syncBefore(cfg, 'fresh');
    daemon = await startDaemon({
      config: cfg,
      logger: silentLogger(),
      jobs: jobs({ name: 'fresh', schedule: NEVER }, { name: 'stale', schedule: NEVER }),
    });
    await waitFor('the catch-up run of stale to finish and publish', async () => {
      const gauges = await jobGauges(daemon!.url);
      return gauges.running.length === 0 && gauges.queued.length === 0
        ? (await runs()).some((r) => r.job === 'stale')
        : false;
    });
    expect(existsSync(join(tmp.dir, 'published', 'warehouse.duckdb'))).toBe(true);
    expect((await runs()).map((r) => `${r.job} ${r.status}`)).toEqual(['fresh succeeded', 'stale succeeded']);
  });
});
