import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { ReaderMetrics } from '../../src/reader/reader-metrics.js';
import { startRawServer } from '../helpers/raw-server.js';
import { runCli } from '../helpers/cli.js';
import { startTestSimulator } from '../helpers/simulator.js';
import {
  capturingLogger,
  openTestWarehouse,
  query,
  syncTargetOnce,
  tempDir,
  testConfig,
} from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

type Wire = Record<string, unknown>;

/** Twenty wire reports of a generated dataset, and an NDJSON upstream serving `body()` as it is now. */
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
  return {
    url: server.url,
    reports,
    serve(next: Wire[]) {
      lines = next;
    },
  };
}

/** An NDJSON upstream serving `reports` (as `serve` sets them) with a `/stats` total that counts them. */
async function countedUpstream(reports: Wire[]) {
  let lines = reports;
  const server = await startRawServer((req, res) => {
    if (req.url?.endsWith('/stats')) return void res.end(JSON.stringify({ total: lines.length }));
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end(lines.map((r) => JSON.stringify(r)).join('\n') + '\n');
  });
  onTestFinished(() => server.close());
  return { url: server.url, serve: (next: Wire[]) => void (lines = next) };
}

/** `reports` with report `i` replaced by `change(copy of it)`. */
function edited(reports: Wire[], i: number, change: (r: Wire) => Wire): Wire[] {
  return reports.map((r, j) => (j === i ? change({ ...r }) : r));
}

const EVENTS = `SELECT kind, field, value, count::INTEGER AS count FROM drift_events WHERE run_id = $run ORDER BY kind, field`;

describe('schema drift', () => {
  it('a new status value and a new unknown field each make one drift event; a type change and a gone field too', async () => {
    const up = await upstream();
    const config = testConfig(up.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    try {
      const [first] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(first?.status).toBe('succeeded');
      expect(first?.drift).toEqual([]); // the first run sets the baseline
      const status = String(up.reports[0]!.status);
      expect(status).not.toBe('ON_HOLD');

      let next = edited(up.reports, 0, (r) => ({ ...r, status: 'ON_HOLD' }));
      next = edited(next, 1, (r) => ({ ...r, priority: 3 }));
      up.serve(next);
      const { logger, lines } = await capturingLogger();
      const [second] = await syncTargetOnce(warehouse, config, 'ndjson', logger);
      expect(second?.status).toBe('succeeded');
      expect(await query(warehouse, EVENTS, { run: second!.runId })).toEqual([
        { kind: 'new_field', field: 'priority', value: 'number', count: 1 },
        { kind: 'new_value', field: 'status', value: 'ON_HOLD', count: 1 },
      ]);
      expect(second?.drift).toHaveLength(2);
      // Logged at warn, one line per event.
      const warned = lines.filter((l) => l.level === 40 && String(l.msg).startsWith('schema drift'));
      expect(warned.map((l) => l.msg)).toEqual([
        'schema drift: new status value "ON_HOLD" (1 records)',
        'schema drift: new field "priority" of type number (1 records)',
      ]);

      // Seen before: no event again.
      const [same] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(same?.drift).toEqual([]);

      up.serve(edited(next, 1, (r) => ({ ...r, priority: 'high' })));
      const [third] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(await query(warehouse, EVENTS, { run: third!.runId })).toEqual([
        { kind: 'type_changed', field: 'priority', value: 'string', count: 1 },
      ]);

      up.serve(edited(next, 1, (r) => ({ ...r, priority: undefined })));
      const [fourth] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(await query(warehouse, EVENTS, { run: fourth!.runId })).toEqual([
        { kind: 'field_gone', field: 'priority', value: null, count: 1 },
      ]);

      // /metrics counts them by kind.
      const metrics = new ReaderMetrics(new Registry());
      const c = await warehouse.connect();
      try {
        await metrics.refresh(c, 5_000);
      } finally {
        c.closeSync();
      }
      const text = await metrics.registry.metrics();
      for (const kind of ['new_value', 'new_field', 'type_changed', 'field_gone']) {
        expect(text).toContain(`reports_sync_drift_events_total{kind="${kind}"} 1`);
      }
    } finally {
      await warehouse.close();
    }
  });

  it('a field gone the day a report carrying it is unpublished is gone (the tombstones come first)', async () => {
    const { reports } = await upstream();
    const withWard = reports.map((r, i) => (i < 3 ? { ...r, ward: `W${i}` } : r));
    const up = await countedUpstream(withWard);
    const config = testConfig(up.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    try {
      expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
      // `ward` renamed `zz_ward_name`, and report 0 (which carried `ward`) unpublished, the same day.
      up.serve(
        withWard.slice(1).map(({ ward, ...r }) => (ward === undefined ? r : { ...r, zz_ward_name: ward })),
      );
      const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect([run?.status, run?.counters.removed]).toEqual(['succeeded', 1]);
      expect(await query(warehouse, EVENTS, { run: run!.runId })).toEqual([
        { kind: 'field_gone', field: 'ward', value: null, count: 3 },
        { kind: 'new_field', field: 'zz_ward_name', value: 'string', count: 2 },
      ]);
    } finally {
      await warehouse.close();
    }
  });

  it('REPORTS_SCHEMA_CONTRACT=freeze fails the run with exit 1 before merging when a new value or field appears', async () => {
    const up = await upstream();
    const path = `${tmp.dir}/w.duckdb`;
    const env = { REPORTS_BASE_URL: up.url, REPORTS_WAREHOUSE: path, REPORTS_SCHEMA_CONTRACT: 'freeze' };
    const first = await runCli(['sync', '--source', 'ndjson'], env);
    expect(first.code, first.stderr).toBe(0);

    up.serve(edited(up.reports, 3, (r) => ({ ...r, destination: 'NEW_DESTINATION', extraNote: 'x' })));
    const frozen = await runCli(['sync', '--source', 'ndjson'], env);
    expect(frozen.code).toBe(1);
    expect(frozen.stderr).toMatch(/SCHEMA_FROZEN|REPORTS_SCHEMA_CONTRACT=freeze/);

    const config = testConfig(up.url, path);
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await query(
        warehouse,
        `SELECT run_id, status, error->>'code' AS code FROM sync_runs ORDER BY started_at DESC LIMIT 1`,
      );
      expect(run).toMatchObject({ status: 'failed', code: 'SCHEMA_FROZEN' });
      expect(await query(warehouse, EVENTS, { run: String(run!.run_id) })).toEqual([
        { kind: 'new_field', field: 'extraNote', value: 'string', count: 1 },
        { kind: 'new_value', field: 'destination', value: 'NEW_DESTINATION', count: 1 },
      ]);
      // Nothing merged: the report is as the first run left it, one version each.
      const [report] = await query(warehouse, `SELECT destination FROM reports WHERE id = $id`, {
        id: String(up.reports[3]!.id),
      });
      expect(report?.destination).toBe(up.reports[3]!.destination);
      const [versions] = await query(warehouse, `SELECT count(*)::INTEGER AS n FROM report_versions`);
      expect(versions?.n).toBe(up.reports.length);
    } finally {
      await warehouse.close();
    }

    // evolve accepts the change once; freeze then passes again.
    const evolve = await runCli(['sync', '--source', 'ndjson'], {
      ...env,
      REPORTS_SCHEMA_CONTRACT: 'evolve',
    });
    expect(evolve.code, evolve.stderr).toBe(0);
    const again = await runCli(['sync', '--source', 'ndjson'], env);
    expect(again.code, again.stderr).toBe(0);

    // `status` shows the drift of the last runs.
    const status = await runCli(['status'], { REPORTS_WAREHOUSE: path });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/Schema drift of the last runs/);
    expect(status.stdout).toContain('NEW_DESTINATION');
  });
});
