import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schedulePeriodMs } from '../../src/daemon/cron-times.js';
import { resolveJobs } from '../../src/daemon/load-jobs.js';
import { startDaemon, type Daemon } from '../../src/daemon/start-daemon.js';
import { silentLogger } from '../../src/util/logger.js';
import { waitFor } from '../helpers/daemon.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { query, tempDir, testConfig } from '../helpers/sync.js';

const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
const RULES_DIR = join(import.meta.dirname, '..', '..', 'deploy', 'prometheus');
const available = existsSync(PROMTOOL);
// In CI a missing promtool is a failure (the test below throws), never a silent skip.
const run = available || process.env.CI === 'true';

describe.skipIf(!run)('deploy/prometheus/alerts.yml (promtool)', () => {
  it('is valid and its unit tests pass (promtool check rules, promtool test rules)', () => {
    if (!available)
      throw new Error(`promtool not found at ${PROMTOOL}: install it (apt-get install prometheus)`);
    const check = execFileSync(PROMTOOL, ['check', 'rules', 'alerts.yml'], {
      cwd: RULES_DIR,
      encoding: 'utf8',
    });
    expect(check).toContain('SUCCESS: 5 rules found');
    const test = execFileSync(PROMTOOL, ['test', 'rules', 'alerts.test.yml'], {
      cwd: RULES_DIR,
      encoding: 'utf8',
    });
    expect(test).toContain('SUCCESS');
  });
});

// The rules are only as good as the metrics they read: every name they use is in a real daemon's /metrics.
describe('the metrics the rules read', { timeout: 120_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: TestSimulator;
  let daemon: Daemon;

  beforeAll(async () => {
    tmp = tempDir();
    sim = await startTestSimulator({ fixture: 'small.ndjson' });
    const config = testConfig(sim.url, join(tmp.dir, 'warehouse.duckdb'), {
      port: 0,
      host: '127.0.0.1',
      maxRejectRatio: 0.5,
      publishMinIntervalMs: 0,
      // A PostgreSQL that refuses connections (nothing listens on port 9): every publish to it fails,
      // the syncs succeed, and the failure is in /metrics.
      postgresUrl: 'postgres://reports@127.0.0.1:9/reports',
    });
    const jobs = resolveJobs(
      [
        {
          file: 'a.ts',
          declaration: { name: 'sync-ndjson', schedule: '0 0 1 1 *', target: 'ndjson', description: '' },
        },
        {
          file: 'b.ts',
          declaration: { name: 'snapshot-stats', schedule: '0 0 1 1 *', target: 'stats', description: '' },
        },
      ],
      {},
      ['ndjson', 'stats'],
    );
    daemon = await startDaemon({ config, logger: silentLogger(), jobs });
    // Both catch-up runs, and the watchdog's check after them.
    await waitFor('the catch-up runs', async () => {
      const done = await query(
        daemon.warehouse,
        `SELECT count(*) AS n FROM sync_runs WHERE status = 'succeeded'`,
      );
      return Number(done[0]?.n) === 2;
    });
    // The publish after the last job: the snapshot then holds every change.
    await waitFor('the snapshot to be published after the last job', async () => {
      await daemon.watchdog.check();
      return daemon.watchdog.lags.get('snapshot')?.lagMs === 0;
    });
    await waitFor('the failed PostgreSQL publish after the last job', async () => {
      await daemon.watchdog.check();
      return daemon.watchdog.lags.get('postgres')?.runsBehind === 2;
    });
  }, 120_000);
  afterAll(async () => {
    await daemon?.stop('test over');
    await sim?.close();
    tmp?.cleanup();
  });

  it('exports every metric alerts.yml uses, with the labels it joins on', async () => {
    const rules = readFileSync(join(RULES_DIR, 'alerts.yml'), 'utf8');
    const used = new Set(rules.match(/\b(reports_sync_[a-z_]+|process_start_time_seconds)\b/g));
    expect(used.size).toBeGreaterThanOrEqual(6);
    const text = await (await fetch(`${daemon.url}/metrics`)).text();
    const exported = new Set([...text.matchAll(/^([a-z_]+)[{ ]/gm)].map((m) => m[1]));
    expect([...used].filter((name) => !exported.has(name))).toEqual([]);
    // Twice the period of a yearly schedule (its next two firings, a year apart).
    const objective = (2 * schedulePeriodMs('0 0 1 1 *', 'UTC')) / 1000;
    expect(text).toContain(`reports_sync_job_freshness_objective_seconds{job="sync-ndjson"} ${objective}\n`);
    expect(text).toMatch(/^reports_sync_last_success_timestamp_seconds\{job="sync-ndjson"\} \d+/m);
    expect(text).toMatch(/^reports_sync_publish_lag_seconds\{target="snapshot"\} 0$/m);
    expect(text).toMatch(/^reports_sync_publish_last_attempt_failed\{target="postgres"\} 1$/m);
    expect(text).toMatch(/^reports_sync_publish_lag_runs\{target="postgres"\} 2$/m);
    // small.ndjson: the upstream counts 10 reports (its /stats), the warehouse holds the 10 valid ones.
    expect(text).toMatch(/^reports_sync_stats_reports\{source="upstream"\} \d+$/m);
    expect(text).toMatch(/^reports_sync_stats_total_difference 0$/m);
    expect(text).toMatch(/^reports_sync_alerts_open\{type="run.failed"\} 0$/m);
  });

  it.skipIf(!run)('passes promtool check metrics', async () => {
    if (!available)
      throw new Error(`promtool not found at ${PROMTOOL}: install it (apt-get install prometheus)`);
    const text = await (await fetch(`${daemon.url}/metrics`)).text();
    // Exit 0 only without a lint problem (promtool prints them and exits 3).
    expect(() =>
      execFileSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' }),
    ).not.toThrow();
  });

  it('passes over a run aborted by a shutdown, not one a killed process left, and counts no running run', async () => {
    // As a SIGTERM past the grace period records it: a later run of the job, `aborted`.
    await query(
      daemon.warehouse,
      `INSERT INTO sync_runs SELECT * REPLACE ('aborted-run' AS run_id, 'aborted' AS status,
         started_at + INTERVAL 1 MINUTE AS started_at, finished_at + INTERVAL 1 MINUTE AS finished_at)
       FROM sync_runs WHERE job = 'sync-ndjson' AND status = 'succeeded' LIMIT 1`,
    );
    const text = await (await fetch(`${daemon.url}/metrics`)).text();
    expect(text).toMatch(/^reports_sync_last_run_success\{job="sync-ndjson"\} 1$/m);
    expect(text).toMatch(/^reports_sync_runs_total\{job="sync-ndjson",status="aborted"\} 1$/m);
    expect(text).not.toMatch(/status="running"/);
    // A run a killed process left (an out-of-memory kill) is a failure of the job.
    await query(
      daemon.warehouse,
      `UPDATE sync_runs SET error = '{"code":"RUN_INTERRUPTED","message":"the process ended"}'::JSON
       WHERE run_id = 'aborted-run'`,
    );
    const after = await (await fetch(`${daemon.url}/metrics`)).text();
    expect(after).toMatch(/^reports_sync_last_run_success\{job="sync-ndjson"\} 0$/m);
  });
});
