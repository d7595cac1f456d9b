import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Registry } from 'prom-client';
import { AlertCenter } from '../../src/alerts/alert-center.js';
import { registerDaemonMetrics } from '../../src/daemon/daemon-metrics.js';
import type { Job } from '../../src/daemon/load-jobs.js';
import { SyncError } from '../../src/util/errors.js';
import { silentLogger } from '../../src/util/logger.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { waitFor } from '../helpers/daemon.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';
import { newWebhookSecret, startWebhookReceiver } from '../helpers/webhook-receiver.js';

// A run whose failure the warehouse cannot record (a full disk: syncTarget throws, no run log row) is
// invisible to the rules, which read the run log, and no event can be stored. The operator hears of it all
// the same, once, and hears it end when a run of the job is recorded again.
describe('a failure the warehouse cannot record', { timeout: 120_000 }, () => {
  async function world() {
    const tmp = tempDir('reports-sync-unrecorded-');
    const sim = await startTestSimulator({ generate: { n: 50, seed: 3 } });
    const secret = newWebhookSecret();
    const receiver = await startWebhookReceiver(secret);
    onTestFinished(async () => {
      await receiver.close();
      await sim.close();
      tmp.cleanup();
    });
    const config = testConfig(sim.url, join(tmp.dir, 'w.duckdb'), {
      alertWebhookUrls: receiver.url,
      alertWebhookSecret: secret,
      alertWebhookRetries: 0,
    });
    return { receiver, config };
  }
  const diskFull = new SyncError(
    'WAREHOUSE_WRITE',
    'No space left on device: the warehouse cannot be written',
  );

  it('is sent once per job, also when not even its delivery can be recorded (a read-only file)', async () => {
    const { receiver, config } = await world();
    const writable = await openTestWarehouse(config);
    writable.close();
    const readOnly = await openWarehouse(config.warehouse, { readOnly: true });
    onTestFinished(() => readOnly.close());
    const alerts = new AlertCenter({ warehouse: readOnly, config, logger: silentLogger() });
    await alerts.unrecordedFailure('sync-ndjson', diskFull);
    await alerts.unrecordedFailure('sync-ndjson', diskFull);
    await alerts.afterRuns([], ['sync-ndjson']); // nothing recorded: nothing ends
    await waitFor('the delivery', () => receiver.delivered().length === 1);
    await alerts.close(5_000);
    expect(receiver.delivered().map((r) => r.json.type)).toEqual(['run.failed']);
    expect(receiver.delivered()[0]?.json.data).toMatchObject({
      state: 'open',
      job: 'sync-ndjson',
      figures: { code: 'WAREHOUSE_WRITE', recorded: false },
    });
  });

  it('ends with run.recovered once a run of the job is recorded as succeeded', async () => {
    const { receiver, config } = await world();
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const alerts = new AlertCenter({ warehouse, config, logger: silentLogger() });
    // What the daemon's /metrics says of it: the run log cannot, so a gauge of its own (rule RunFailing).
    const registry = new Registry();
    registerDaemonMetrics(registry, {
      jobs: [{ name: 'sync-ndjson' } as Job],
      timezone: 'UTC',
      running: () => undefined,
      pending: () => [],
      unrecordedFailures: () => alerts.unrecordedJobs,
    });
    const gauge = async () =>
      /^reports_sync_job_failure_unrecorded\{job="sync-ndjson"\} (\d)$/m.exec(await registry.metrics())?.[1];
    expect(await gauge()).toBe('0');
    await alerts.unrecordedFailure('sync-ndjson', diskFull);
    expect(await gauge()).toBe('1');
    const runs = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(runs[0]?.status).toBe('succeeded');
    await alerts.afterRuns(
      runs.map((r) => r.runId),
      ['sync-ndjson'],
    );
    expect(await gauge()).toBe('0');
    await waitFor('both deliveries', () => receiver.delivered().length === 2);
    await alerts.close(5_000);
    expect(receiver.delivered().map((r) => [r.json.type, r.json.data?.state])).toEqual([
      ['run.failed', 'open'],
      ['run.recovered', 'resolved'],
    ]);
  });
});
