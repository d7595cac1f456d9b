import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AlertCenter } from '../../src/alerts/alert-center.js';
import type { ConfigOverrides } from '../../src/config/config.js';
import { silentLogger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { waitFor } from '../helpers/daemon.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';
import { newWebhookSecret, startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

// Alerts after real runs against the simulator, delivered to a real HTTP receiver on loopback that
// verifies each Standard Webhooks signature and counts what it got.
describe('alert webhooks', { timeout: 120_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: TestSimulator;
  let receiver: WebhookReceiver;
  let warehouse: Warehouse | undefined;
  const secret = newWebhookSecret();

  const config = (overrides: ConfigOverrides = {}) =>
    testConfig(sim.url, join(tmp.dir, 'warehouse.duckdb'), {
      alertWebhookUrls: receiver.url,
      alertWebhookSecret: secret,
      alertWebhookRetries: 2,
      alertWebhookTimeoutMs: 1_000,
      maxRejectRatio: 0.5, // the fixture quarantines 4 of its 14 lines
      ...overrides,
    });

  /** One sync of `sync-ndjson` and the alert hook after it, as the one-shot CLI does; deliveries drained. */
  const syncAndAlert = async (cfg = config(), drainMs = 10_000) => {
    warehouse ??= await openTestWarehouse(cfg);
    const runs = await syncTargetOnce(warehouse, cfg, 'ndjson');
    const alerts = new AlertCenter({ warehouse, config: cfg, logger: silentLogger(), retryBaseMs: 20 });
    const events = await alerts.afterRuns(runs.map((r) => r.runId));
    await alerts.close(drainMs);
    return { runs, events };
  };
  const deliveries = () =>
    query(
      warehouse!,
      `SELECT event_id, endpoint, status, attempts, status_code, last_error FROM alert_deliveries`,
    );

  beforeEach(async () => {
    tmp = tempDir();
    sim = await startTestSimulator({ fixture: 'small.ndjson' });
    receiver = await startWebhookReceiver(secret);
  });
  afterEach(async () => {
    warehouse?.close();
    warehouse = undefined;
    await receiver.close();
    tmp.cleanup();
  });

  it('signs run.failed once per incident and run.recovered when it clears; a second failure sends nothing', async () => {
    const cfg = config();
    sim.setFaults(['ndjson:status=403']);
    const first = await syncAndAlert(cfg);
    expect(first.runs[0]?.status).toBe('failed');
    expect(first.events.map((e) => e.type)).toEqual(['run.failed']);
    expect(receiver.delivered()).toHaveLength(1);
    const [sent] = receiver.received;
    expect(sent?.verified).toBe(true);
    expect(sent?.headers['webhook-id']).toBe(first.events[0]?.eventId);
    expect(sent?.json.type).toBe('run.failed');
    expect(sent?.json.data).toMatchObject({
      state: 'open',
      job: 'sync-ndjson',
      runId: first.runs[0]?.runId,
      figures: { code: 'HTTP_STATUS', consecutiveFailures: 1 },
    });
    expect(String(sent?.json.data?.summary)).toContain('sync-ndjson failed: HTTP_STATUS');

    const second = await syncAndAlert(cfg);
    expect(second.runs[0]?.status).toBe('failed');
    expect(second.events).toEqual([]);
    expect(receiver.received).toHaveLength(1);

    sim.setFaults([]);
    const third = await syncAndAlert(cfg);
    expect(third.runs[0]?.status).toBe('succeeded');
    expect(third.events.map((e) => [e.type, e.state])).toEqual([['run.recovered', 'resolved']]);
    expect(third.events[0]?.figures).toMatchObject({ failedRuns: 2 });
    expect(receiver.delivered().map((r) => r.json.type)).toEqual(['run.failed', 'run.recovered']);
    expect(receiver.received.every((r) => r.verified)).toBe(true);

    const stored = await query(
      warehouse!,
      'SELECT type, state, incident FROM alert_events ORDER BY raised_at',
    );
    expect(stored).toEqual([
      { type: 'run.failed', state: 'open', incident: 'run:sync-ndjson' },
      { type: 'run.recovered', state: 'resolved', incident: 'run:sync-ndjson' },
    ]);
    const rows = await deliveries();
    expect(rows.map((r) => [r.status, r.attempts, r.status_code])).toEqual([
      ['delivered', 1, 204],
      ['delivered', 1, 204],
    ]);
    // The endpoint is stored without its path and query (a token may be in them).
    expect(rows[0]?.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\[redacted\]$/);
  });

  it('retries 500s with backoff and records every attempt; delivered on the third', async () => {
    receiver.setBehaviour((n) => ({ status: n <= 2 ? 500 : 200 }));
    sim.setFaults(['ndjson:status=403']);
    await syncAndAlert();
    expect(receiver.received.map((r) => r.answered)).toEqual([500, 500, 200]);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    // One event, three attempts at it: the same webhook-id each time (receivers de-duplicate on it).
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(await deliveries()).toMatchObject([{ status: 'delivered', attempts: 3, status_code: 200 }]);
  });

  it('gives up after its retries on a receiver that keeps answering 500, and a 400 is not retried', async () => {
    receiver.setBehaviour(() => ({ status: 500 }));
    sim.setFaults(['ndjson:status=403']);
    const { runs } = await syncAndAlert();
    expect(runs[0]?.status).toBe('failed');
    expect(receiver.received).toHaveLength(3); // the attempt and 2 retries
    expect(await deliveries()).toMatchObject([
      { status: 'failed', attempts: 3, status_code: 500, last_error: 'the receiver answered 500' },
    ]);

    receiver.setBehaviour(() => ({ status: 400 }));
    sim.setFaults([]);
    await syncAndAlert();
    expect(receiver.received).toHaveLength(4);
    const last = (await deliveries()).find((d) => d.status_code === 400);
    expect(last).toMatchObject({ status: 'failed', attempts: 1, last_error: 'the receiver answered 400' });
  });

  it('a receiver that is down or slow never fails or holds up the sync; each attempt is recorded', async () => {
    await receiver.close(); // nothing listens on its port any more
    sim.setFaults(['ndjson:status=403']);
    const down = await syncAndAlert();
    expect(down.runs[0]?.status).toBe('failed'); // the run's own outcome, nothing added
    const [refused] = await deliveries();
    expect(refused).toMatchObject({ status: 'failed', attempts: 3, status_code: null });
    expect(String(refused?.last_error)).toMatch(/ECONNREFUSED|connect/i);
    // The URL's token is in no error.
    expect(String(refused?.last_error)).not.toContain('abc123secret');

    receiver = await startWebhookReceiver(secret, () => ({ status: 200, delayMs: 3_000 }));
    sim.setFaults([]);
    const started = Date.now();
    const cfg = config({ alertWebhookUrls: receiver.url });
    warehouse!.close();
    warehouse = undefined;
    const slow = await syncAndAlert(cfg, 10_000);
    expect(slow.runs[0]?.status).toBe('succeeded');
    // The run.recovered event: three attempts, each cut by the 1 s timeout.
    const rows = await deliveries();
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatchObject({ status: 'failed', attempts: 3, status_code: null });
    expect(String(rows[1]?.last_error)).toMatch(/timeout|aborted/i);
    expect(receiver.received).toHaveLength(3);
    // Three attempts of 1 s each plus backoff, not three of 3 s: the timeout cut them.
    expect(Date.now() - started).toBeLessThan(9_000);
  });

  it('a shutdown waits at most the drain time, leaves the delivery pending, and the next start sends it', async () => {
    receiver.setBehaviour(() => ({ status: 200, delayMs: 5_000 }));
    sim.setFaults(['ndjson:status=403']);
    const cfg = config({ alertWebhookTimeoutMs: 20_000 });
    const started = Date.now();
    await syncAndAlert(cfg, 300);
    expect(Date.now() - started).toBeLessThan(4_500);
    expect(await deliveries()).toMatchObject([{ status: 'pending' }]);

    receiver.setBehaviour(() => ({ status: 204 }));
    const next = new AlertCenter({ warehouse: warehouse!, config: cfg, logger: silentLogger() });
    expect(await next.resumePending()).toBe(1);
    await waitFor('the pending delivery to be sent', async () => receiver.delivered().length === 1);
    await next.close(5_000);
    expect(await deliveries()).toMatchObject([{ status: 'delivered' }]);
    expect(receiver.delivered()[0]?.json.type).toBe('run.failed');
  });

  it('a delivery resumed at the next start counts on from the attempts it had', async () => {
    // The first attempt answered 500, the second was cut by the shutdown: pending after two attempts.
    receiver.setBehaviour((n) => (n === 1 ? { status: 500 } : { status: 200, delayMs: 5_000 }));
    sim.setFaults(['ndjson:status=403']);
    const cfg = config({ alertWebhookTimeoutMs: 20_000 });
    await syncAndAlert(cfg, 1_000);
    expect(await deliveries()).toMatchObject([{ status: 'pending', attempts: 2 }]);

    receiver.setBehaviour(() => ({ status: 204 }));
    const next = new AlertCenter({ warehouse: warehouse!, config: cfg, logger: silentLogger() });
    expect(await next.resumePending()).toBe(1);
    await waitFor('the pending delivery to be sent', async () => receiver.delivered().length === 1);
    await next.close(5_000);
    expect(await deliveries()).toMatchObject([{ status: 'delivered', attempts: 3, status_code: 204 }]);
  });

  it('sends every event to each of several webhooks', async () => {
    const other = await startWebhookReceiver(secret);
    try {
      const cfg = config({ alertWebhookUrls: `${receiver.url}, ${other.url}` });
      sim.setFaults(['ndjson:status=403']);
      await syncAndAlert(cfg);
      expect(receiver.delivered()).toHaveLength(1);
      expect(other.delivered()).toHaveLength(1);
      expect(await deliveries()).toHaveLength(2);
    } finally {
      await other.close();
    }
  });
});
