import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { runCli } from '../helpers/cli.js';
import { jobGauges, logLines, spawnDaemon, waitFor, type SpawnedDaemon } from '../helpers/daemon.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, tempDir, testConfig } from '../helpers/sync.js';

/** Only the NDJSON job, caught up at start (it never ran) and otherwise not before next year. */
const ONLY_NDJSON = {
  REPORTS_SCHEDULE_SYNC_NDJSON: '0 0 1 1 *',
  REPORTS_SCHEDULE_SNAPSHOT_STATS: 'off',
  REPORTS_SCHEDULE_SYNC_CSV: 'off',
  REPORTS_SCHEDULE_SYNC_RECENT: 'off',
  REPORTS_BODY_TIMEOUT_MS: '30000',
  REPORTS_RETRY_BASE_MS: '10',
};

// Generous timeouts: other test files and processes share the machine's two cores.
describe('reports-sync run (a separate process)', { timeout: 180_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: TestSimulator;
  let daemon: (SpawnedDaemon & { cleanup(): void }) | undefined;
  const warehouse = () => join(tmp.dir, 'warehouse.duckdb');
  const published = () => join(tmp.dir, 'published', 'warehouse.duckdb');
  const env = (extra: Record<string, string> = {}) => ({
    REPORTS_BASE_URL: sim.url,
    REPORTS_WAREHOUSE: warehouse(),
    ...ONLY_NDJSON,
    ...extra,
  });
  const health = async () =>
    (await (await fetch(`${daemon!.url}/healthz`)).json()) as {
      status: string;
      lastSuccessfulRun: { job: string } | null;
    };

  beforeEach(async () => {
    tmp = tempDir();
    sim = await startTestSimulator({ generate: { n: 400, seed: 9 } });
  });
  afterEach(() => {
    daemon?.cleanup();
    daemon = undefined;
    tmp.cleanup();
  });

  it('publishes a snapshot that other processes read while it holds the warehouse; one-shot commands say so', async () => {
    daemon = await spawnDaemon(env());
    await waitFor('the catch-up sync to be published', async () =>
      existsSync(published()) && (await jobGauges(daemon!.url)).running.length === 0 ? true : undefined,
    );

    // A second process (this test) opens the snapshot read-only with DuckDB while the daemon runs.
    const copy = await DuckDBInstance.create(published(), { access_mode: 'READ_ONLY' });
    try {
      const c = await copy.connect();
      const [row] = (await c.runAndReadAll('SELECT count(*)::INTEGER AS n FROM reports')).getRowObjectsJS();
      expect(row).toEqual({ n: 400 });
      c.closeSync();
    } finally {
      copy.closeSync();
    }
    // The live file itself cannot be opened, not even read-only: the clear error, not DuckDB's.
    const locked = await openWarehouse(warehouse(), { readOnly: true }).catch((e: unknown) => e);
    expect(locked).toMatchObject({
      code: 'WAREHOUSE_LOCKED',
      message: expect.stringContaining(`PID ${daemon.child.pid}`),
    });
    expect(exitCodeFor(locked)).toBe(2);

    const sql = await runCli(['sql', 'select count(*) as n from reports', '--format', 'csv'], env());
    expect(sql.code).toBe(0);
    expect(sql.stdout).toBe('n\n400\n');
    expect(sql.stderr).toContain(
      `in use by reports-sync run (PID ${daemon.child.pid}); reading the published copy ${published()}`,
    );

    const status = await runCli(['status'], env());
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`Warehouse: the published copy ${published()}`);
    expect(status.stdout).toMatch(
      /sync-ndjson\s+0 0 1 1 \* \(REPORTS_SCHEDULE_SYNC_NDJSON\)\s+in \d+ d \d+ h, \d{4}-01-01 00:00/,
    );
    expect(status.stdout).toMatch(/snapshot-stats .*disabled: REPORTS_SCHEDULE_SNAPSHOT_STATS=off/);
    expect(status.stdout).toMatch(/Published snapshot: .*published\/warehouse\.duckdb, written \d+ s ago/);
    expect(status.stdout).toMatch(/sync-ndjson\s+succeeded/);

    // A one-shot sync cannot take the warehouse: exit 2, the holder and the published copy named.
    const sync = await runCli(['sync'], env());
    expect(sync.code).toBe(2);
    expect(sync.stderr).toContain(`is in use by reports-sync run (PID ${daemon.child.pid})`);
    expect(sync.stderr).toContain('The daemon runs the syncs itself: its status page');
    expect(sync.stderr).toContain(`open the read-only published copy ${published()}`);
    expect(sync.stderr).not.toMatch(/IO Error|Conflicting lock/);

    // Still serving, then a clean stop.
    expect(await health()).toMatchObject({ status: 'ok', lastSuccessfulRun: { job: 'sync-ndjson' } });
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
  });

  it('at its first start runs every declared job once, in order: NDJSON, CSV, the stats snapshot, then recent', async () => {
    daemon = await spawnDaemon({
      REPORTS_BASE_URL: sim.url,
      REPORTS_WAREHOUSE: warehouse(),
      REPORTS_CSV_PAGE_SIZE: '100',
    });
    await waitFor('the catch-up runs to finish', async () => {
      const gauges = await jobGauges(daemon!.url);
      return gauges.running.length === 0 && gauges.queued.length === 0 && existsSync(published());
    });
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    const w = await openTestWarehouse(testConfig(sim.url, warehouse()));
    try {
      expect(await query(w, 'SELECT job, source, status FROM sync_runs ORDER BY started_at')).toEqual([
        { job: 'sync-ndjson', source: 'ndjson', status: 'succeeded' },
        { job: 'sync-csv', source: 'csv', status: 'succeeded' },
        { job: 'snapshot-stats', source: 'stats', status: 'succeeded' },
        { job: 'sync-recent', source: 'recent', status: 'succeeded' },
      ]);
      expect(await query(w, 'SELECT count(*)::INTEGER AS n FROM reports')).toEqual([{ n: 400 }]);
    } finally {
      w.close();
    }
  });

  it('on SIGTERM mid-sync aborts after the grace period, records the run as aborted and exits 0', async () => {
    sim.setFaults(['ndjson:stall=5000']); // headers and 5000 bytes, then nothing
    daemon = await spawnDaemon(env({ REPORTS_SHUTDOWN_GRACE_MS: '300' }));
    await waitFor('the export to be in flight', async () =>
      (await jobGauges(daemon!.url)).running.includes('sync-ndjson'),
    );
    await waitFor('the request at the simulator', () =>
      sim.requests().some((r) => r.path.includes('.ndjson')),
    );
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    const logs = logLines(daemon.stderr());
    expect(logs.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        'grace period over: aborting the running job (its run is not merged and is recorded as aborted)',
        'run aborted',
        'daemon stopped',
      ]),
    );

    // The file opens (no lock left), the run is recorded, nothing half-merged, staging cleared.
    const w = await openTestWarehouse(testConfig(sim.url, warehouse()));
    try {
      expect(await query(w, "SELECT job, status, error->>'code' AS code FROM sync_runs")).toEqual([
        { job: 'sync-ndjson', status: 'aborted', code: 'RUN_ABORTED' },
      ]);
      expect(await query(w, 'SELECT count(*)::INTEGER AS n FROM reports')).toEqual([{ n: 0 }]);
      expect(await query(w, 'SELECT count(*)::INTEGER AS n FROM staging_reports')).toEqual([{ n: 0 }]);
      expect(await query(w, 'SELECT count(*)::INTEGER AS n FROM sync_checkpoints')).toEqual([{ n: 0 }]);
    } finally {
      w.close();
    }
    expect(existsSync(published())).toBe(false); // nothing published from an aborted run
  });

  it('on SIGTERM mid-sync lets the run finish within the grace period, records it and exits 0', async () => {
    sim.setFaults(['ndjson:latency=3000']); // the export answers 3 s after it is asked
    daemon = await spawnDaemon(env({ REPORTS_SHUTDOWN_GRACE_MS: '60000' }));
    await waitFor('the export to be requested', () => sim.requests().some((r) => r.path.includes('.ndjson')));
    let exited = false;
    void daemon.exited.then(() => (exited = true));
    daemon.child.kill('SIGTERM');
    // Stopping closes the listener at once: new requests are refused while the run goes on.
    await waitFor('the HTTP listener to close', () =>
      fetch(`${daemon!.url}/healthz`).then(
        () => false,
        () => true,
      ),
    );
    expect(exited, 'the process still finishing its run').toBe(false);
    expect(await daemon.exited).toEqual({ code: 0, signal: null });
    const w = await openTestWarehouse(testConfig(sim.url, warehouse()));
    try {
      expect(await query(w, 'SELECT status, records_read::INTEGER AS n FROM sync_runs')).toEqual([
        { status: 'succeeded', n: 400 },
      ]);
      expect(await query(w, 'SELECT count(*)::INTEGER AS n FROM reports')).toEqual([{ n: 400 }]);
    } finally {
      w.close();
    }
    expect(existsSync(published())).toBe(true); // the finished run was published before the exit
  });
});

describe('progress of a long sync', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => tmp.cleanup());

  it('logs records, records/s, bytes and page as JSON lines when stderr is not a terminal', async () => {
    const sim = await startTestSimulator({ generate: { n: 3000, seed: 2 } });
    const r = await runCli(['sync', '--source', 'ndjson'], {
      REPORTS_BASE_URL: sim.url,
      REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb'),
      REPORTS_BATCH_SIZE: '500',
      REPORTS_PROGRESS_INTERVAL_MS: '1',
    });
    expect(r.code).toBe(0);
    const progress = logLines(r.stderr).filter((l) => l.msg === 'sync progress');
    expect(progress.length).toBeGreaterThan(1);
    const last = progress.at(-1)!;
    expect(last).toMatchObject({ source: 'ndjson', records: 3000 });
    expect(Number(last.bytes)).toBeGreaterThan(3000 * 300);
    expect(Number(last.recordsPerSecond)).toBeGreaterThan(0);
    expect(progress.map((l) => Number(l.records))).toEqual(
      [...progress.map((l) => Number(l.records))].sort((a, b) => a - b),
    );
  });
});
