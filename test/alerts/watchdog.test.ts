import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AlertCenter } from '../../src/alerts/alert-center.js';
import { resolveJobs } from '../../src/daemon/load-jobs.js';
import { Watchdog } from '../../src/daemon/watchdog.js';
import type { Config } from '../../src/config/config.js';
import { syncTarget } from '../../src/sync/sync-sources.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { silentLogger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, tempDir, testConfig } from '../helpers/sync.js';

const HOUR = 3_600_000;

// The watchdog with an injected clock over a real warehouse: no timers, the test moves the clock.
describe('the freshness watchdog', { timeout: 60_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: TestSimulator;
  let config: Config;
  let warehouse: Warehouse;
  let alerts: AlertCenter;
  let now: number;
  const clock = () => now;

  const watchdog = (env: NodeJS.ProcessEnv = {}) =>
    new Watchdog({
      alerts,
      // Hourly: its objective is two hours, unless the environment says otherwise.
      jobs: resolveJobs(
        [
          {
            file: 'hourly.ts',
            declaration: { name: 'hourly', schedule: '0 * * * *', target: 'ndjson', description: '' },
          },
        ],
        env,
        ['ndjson'],
      ),
      timezone: 'UTC',
      publishTargets: [],
      publishLagMs: HOUR,
      logger: silentLogger(),
      clock,
    });
  const events = () =>
    query(warehouse, 'SELECT type, state, incident FROM alert_events ORDER BY raised_at, event_id');

  beforeEach(async () => {
    tmp = tempDir();
    sim = await startTestSimulator({ fixture: 'small.ndjson' });
    config = testConfig(sim.url, join(tmp.dir, 'warehouse.duckdb'), { maxRejectRatio: 0.5 });
    warehouse = await openTestWarehouse(config);
    alerts = new AlertCenter({ warehouse, config, logger: silentLogger(), clock });
  });
  afterEach(async () => {
    await alerts.close(0);
    warehouse.close();
    tmp.cleanup();
  });

  it('raises freshness.breached once for a job that never runs, and clears it once when it succeeds', async () => {
    // The watch began three hours ago (the daemon started then) and the job has not run since.
    now = Date.now() - 3 * HOUR;
    const dog = watchdog();
    expect(dog.objectives.get('hourly')).toBe(2 * HOUR);
    now += 60_000;
    expect(await dog.check()).toEqual([]); // a minute in: fine

    now = Date.now(); // three hours in, past the objective: no job ran in between
    const breached = await dog.check();
    expect(breached.map((e) => [e.type, e.state, e.job])).toEqual([['freshness.breached', 'open', 'hourly']]);
    expect(breached[0]?.summary).toMatch(
      /hourly has not succeeded once in the 3 h 0 min it has been watched/,
    );
    expect(breached[0]?.figures).toMatchObject({ objectiveMs: 2 * HOUR, lastSuccessAt: null });
    // Checks keep coming (every minute in the daemon): no second alert, however late it gets.
    for (const later of [1, 2, 30, 24 * 60]) {
      now = Date.now() + later * 60_000;
      expect(await dog.check()).toEqual([]);
    }

    const dispatcher = createHttpAgent(config);
    try {
      const [run] = await syncTarget({
        warehouse,
        config,
        dispatcher,
        logger: silentLogger(),
        target: 'ndjson',
        job: 'hourly',
      });
      expect(run?.status).toBe('succeeded');
    } finally {
      await dispatcher.close();
    }
    now = Date.now() + 1_000;
    const restored = await dog.check();
    expect(restored.map((e) => [e.type, e.state])).toEqual([['freshness.restored', 'resolved']]);
    expect(await dog.check()).toEqual([]);
    expect(await events()).toEqual([
      { type: 'freshness.breached', state: 'open', incident: 'freshness:hourly' },
      { type: 'freshness.restored', state: 'resolved', incident: 'freshness:hourly' },
    ]);

    // Its next breach is a new incident: one more open event, measured from that success.
    now = Date.now() + 2 * HOUR + 60_000;
    expect((await dog.check()).map((e) => e.summary)).toEqual([
      expect.stringMatching(/^hourly has had no successful run for 2 h 1 min \(objective 2 h 0 min/),
    ]);
  });

  it('takes the objective from REPORTS_FRESHNESS_<JOB>, and off watches nothing', async () => {
    now = Date.now();
    const strict = watchdog({ REPORTS_FRESHNESS_HOURLY: '60000' });
    expect(strict.objectives.get('hourly')).toBe(60_000);
    now += 61_000;
    expect((await strict.check()).map((e) => e.type)).toEqual(['freshness.breached']);
    const off = watchdog({ REPORTS_FRESHNESS_HOURLY: 'off' });
    expect(off.objectives.size).toBe(0);
    expect(() => watchdog({ REPORTS_FRESHNESS_HOURLY: '2h' })).toThrow(
      /REPORTS_FRESHNESS_HOURLY="2h" is not valid/,
    );
    expect(() => watchdog({ REPORTS_FRESHNESS_HOURLI: '1000' })).toThrow(
      /REPORTS_FRESHNESS_HOURLI names no job/,
    );
  });
});
