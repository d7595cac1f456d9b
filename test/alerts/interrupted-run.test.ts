import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateDataset } from '../../src/simulator/generate.js';
import { startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { spawnDaemon, waitFor } from '../helpers/daemon.js';
import { tempDir } from '../helpers/sync.js';
import { newWebhookSecret, startWebhookReceiver } from '../helpers/webhook-receiver.js';

// A sync killed mid-run (SIGKILL: what the kernel's out-of-memory killer sends) never reaches the alert
// hook after its run. The next start closes the run as `RUN_INTERRUPTED`; the operator hears of it then,
// before the new run, and hears it recover when the new run succeeds.
describe('a run a killed process left', { timeout: 120_000 }, () => {
  /** A simulator of 300 reports, a signature-checking webhook receiver, and the environment naming both. */
  async function world() {
    const tmp = tempDir('reports-sync-interrupted-');
    const sim = await startSimulator({ dataset: generateDataset(300, 5) });
    const secret = newWebhookSecret();
    const receiver = await startWebhookReceiver(secret);
    onTestFinished(async () => {
      await receiver.close();
      await sim.close();
      tmp.cleanup();
    });
    const env = {
      REPORTS_BASE_URL: sim.url,
      REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb'),
      REPORTS_BATCH_SIZE: '50',
      REPORTS_ALERT_WEBHOOK_URL: receiver.url,
      REPORTS_ALERT_WEBHOOK_SECRET: secret,
    };
    return { receiver, env };
  }

  it('one-shot sync: raises run.failed with RUN_INTERRUPTED at the next start, then run.recovered', async () => {
    const { receiver, env } = await world();
    const killed = spawnCli(['sync', '--source', 'ndjson'], { ...env, REPORTS_FAILPOINT: 'after-batch' });
    await killed.waitFor(/failpoint after-batch reached/);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(receiver.received).toEqual([]);

    const next = await runCli(['sync', '--source', 'ndjson'], env);
    expect(next.code, next.stderr).toBe(0);
    const events = receiver.delivered().map((r) => r.json);
    expect(events.map((e) => e.type)).toEqual(['run.failed', 'run.recovered']);
    expect(events[0]?.data).toMatchObject({
      state: 'open',
      figures: { code: 'RUN_INTERRUPTED', consecutiveFailures: 1 },
    });
    expect(String(events[0]?.data?.summary)).toContain('RUN_INTERRUPTED');
    expect(events[1]?.data).toMatchObject({ figures: { failedRuns: 1 } });
  });

  it('daemon: a daemon killed in its run raises run.failed at its next start, before its catch-up run recovers', async () => {
    const { receiver, env } = await world();
    const daemonEnv = {
      ...env,
      REPORTS_SCHEDULE_SNAPSHOT_STATS: 'off',
      REPORTS_SCHEDULE_SYNC_CSV: 'off',
      REPORTS_SCHEDULE_SYNC_RECENT: 'off',
    };
    // A warehouse that never synced: the NDJSON job runs at once as its catch-up, and stops at the point.
    const killed = spawnCli(['run', '--port', '0'], { ...daemonEnv, REPORTS_FAILPOINT: 'after-batch' });
    await killed.waitFor(/failpoint after-batch reached/);
    killed.child.kill('SIGKILL');
    await killed.exited;

    // The receiver answers the first delivery late: still in flight as the daemon starts its jobs, it must
    // not be taken for one a stopped process left pending and sent again.
    receiver.setBehaviour((n) => ({ status: 204, delayMs: n === 1 ? 1500 : 0 }));
    const daemon = await spawnDaemon(daemonEnv);
    onTestFinished(() => daemon.cleanup());
    const types = () => receiver.delivered().map((r) => r.json.type);
    await waitFor('run.recovered', () => types().includes('run.recovered'));
    expect(types()).toEqual(['run.failed', 'run.recovered']);
    expect(receiver.delivered()[0]?.json.data).toMatchObject({
      job: 'sync-ndjson',
      figures: { code: 'RUN_INTERRUPTED', consecutiveFailures: 1 },
    });
  });
});
