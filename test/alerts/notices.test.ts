import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { AlertCenter } from '../../src/alerts/alert-center.js';
import type { Config } from '../../src/config/config.js';
import { silentLogger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { startRawServer } from '../helpers/raw-server.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

type Wire = Record<string, unknown>;

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** An NDJSON upstream serving twenty generated reports, changed by `serve`. */
async function upstream() {
  const sim = await startTestSimulator({ generate: { n: 20, seed: 9 } });
  const text = await (await fetch(sim.api('/reports.ndjson'))).text();
  const reports = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Wire);
  let lines = reports;
  const server = await startRawServer((req, res) => {
    if (req.url?.includes('.ndjson')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(lines.map((r) => JSON.stringify(r)).join('\n') + '\n');
    } else {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"code":"NOT_FOUND","message":"no"}}');
    }
  });
  onTestFinished(() => server.close());
  return { url: server.url, reports, serve: (next: Wire[]) => void (lines = next) };
}

/** One sync and the hook after it; the events raised. */
async function syncAndAlert(warehouse: Warehouse, config: Config) {
  const runs = await syncTargetOnce(warehouse, config, 'ndjson');
  const alerts = new AlertCenter({ warehouse, config, logger: silentLogger() });
  try {
    return { runs, events: await alerts.afterRuns(runs.map((r) => r.runId)) };
  } finally {
    await alerts.close(0);
  }
}

describe('notices: drift and data quality', { timeout: 120_000 }, () => {
  it('drift.detected tells a new value and field once, also when a frozen contract fails every run on them', async () => {
    const up = await upstream();
    const frozen = testConfig(up.url, `${tmp.dir}/w.duckdb`, { schemaContract: 'freeze' });
    const warehouse = await openTestWarehouse(frozen);
    try {
      expect((await syncAndAlert(warehouse, frozen)).events).toEqual([]); // the baseline
      up.serve(up.reports.map((r, i) => (i === 0 ? { ...r, status: 'ON_HOLD', priority: 3 } : r)));
      const first = await syncAndAlert(warehouse, frozen);
      expect(first.runs[0]?.error?.code).toBe('SCHEMA_FROZEN');
      expect(first.events.map((e) => e.type).sort()).toEqual(['drift.detected', 'run.failed']);
      const drift = first.events.find((e) => e.type === 'drift.detected');
      expect(drift?.summary).toBe(
        'sync-ndjson: the upstream schema drifted: new field "priority" of type number (1 records); new status value "ON_HOLD" (1 records)',
      );
      expect(drift?.figures).toMatchObject({ events: 2 });

      // The same drift fails the next run again: no new notice, no second run.failed.
      const again = await syncAndAlert(warehouse, frozen);
      expect(again.runs[0]?.error?.code).toBe('SCHEMA_FROZEN');
      expect(again.events).toEqual([]);

      // Accepted once (evolve): the run succeeds and recovers; the drift it records is not news any more.
      const evolve = { ...frozen, schemaContract: 'evolve' } as Config;
      const accepted = await syncAndAlert(warehouse, evolve);
      expect(accepted.runs[0]?.status).toBe('succeeded');
      expect(accepted.events.map((e) => e.type)).toEqual(['run.recovered']);
      expect(
        await query(warehouse, `SELECT count(*) AS n FROM alert_events WHERE type = 'drift.detected'`),
      ).toEqual([{ n: 1 }]);
    } finally {
      warehouse.close();
    }
  });

  it('quality.flagged counts a run’s impossible values by rule, at or over REPORTS_ALERT_QUALITY_FLAGS', async () => {
    const up = await upstream();
    const config = testConfig(up.url, `${tmp.dir}/w.duckdb`, { alertQualityFlags: 2 });
    const warehouse = await openTestWarehouse(config);
    try {
      // One impossible value: under the threshold of two.
      up.serve(up.reports.map((r, i) => (i === 0 ? { ...r, location: { lat: 0, lng: 0 } } : r)));
      const one = await syncAndAlert(warehouse, config);
      expect(one.runs[0]?.counters.qualityFlags).toBe(1);
      expect(one.events).toEqual([]);
      // Two more in the next run: told, with its rules.
      up.serve(
        up.reports.map((r, i) =>
          i === 0
            ? { ...r, location: { lat: 0, lng: 0 } }
            : i < 3
              ? { ...r, updatedAt: '2000-01-01T00:00:00.000Z' }
              : r,
        ),
      );
      const two = await syncAndAlert(warehouse, config);
      expect(two.runs[0]?.counters.qualityFlags).toBe(2);
      expect(two.events.map((e) => [e.type, e.state, e.runId])).toEqual([
        ['quality.flagged', 'notice', two.runs[0]?.runId],
      ]);
      expect(two.events[0]?.summary).toBe(
        'sync-ndjson: 2 impossible values loaded and flagged (updated_before_created 2)',
      );
    } finally {
      warehouse.close();
    }
  });
});
