import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateDataset } from '../../src/simulator/generate.js';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { spawnCli, type CliProcess } from '../helpers/cli-process.js';
import { query, tempDir } from '../helpers/sync.js';

// What the terminal and the exit code say matches what the warehouse holds (docs/deployment.md,
// "Stopping"): SIGINT/SIGTERM sent to the built CLI at given points (failpoints that pause, see
// src/util/failpoint.ts) and at moments spread over a whole run, each time compared with `sync_runs`.

const MERGING = /signal received while the run merges/;
const EXIT_MARKER = fileURLToPath(new URL('../fixtures/exit-marker.mjs', import.meta.url));
const ABORTING = /the run in progress is not merged and is recorded as aborted/;

async function upstream(n: number): Promise<SimulatorHandle> {
  const sim = await startSimulator({ dataset: generateDataset(n, 5) });
  onTestFinished(() => sim.close());
  return sim;
}

function envFor(
  sim: SimulatorHandle,
  extra: Record<string, string> = {},
): Record<string, string> & { REPORTS_WAREHOUSE: string } {
  const tmp = tempDir('reports-sync-signal-');
  onTestFinished(() => tmp.cleanup());
  return {
    REPORTS_BASE_URL: sim.url,
    REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb'),
    REPORTS_BATCH_SIZE: '500',
    REPORTS_LOG_LEVEL: 'info',
    ...extra,
  };
}

/** Every `sync_runs` row of the warehouse, oldest first (none when the file was never created). */
async function runRows(path: string): Promise<Array<{ source: string; status: string }>> {
  let warehouse;
  try {
    warehouse = await openWarehouse(path, { readOnly: true });
  } catch {
    return [];
  }
  try {
    // A file the signal stopped while it was being created holds no run log yet.
    const [log] = await query(
      warehouse,
      `SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'sync_runs'`,
    );
    if (log?.n === 0) return [];
    return (await query(warehouse, 'SELECT source, status FROM sync_runs ORDER BY started_at')) as Array<{
      source: string;
      status: string;
    }>;
  } finally {
    warehouse.close();
  }
}

async function stopped(proc: CliProcess, signal: NodeJS.Signals) {
  proc.child.kill(signal);
  const exit = await proc.exited;
  return { ...exit, ...proc.output() };
}

describe('a signal to a one-shot sync', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)(
    '%s while a run reads: not merged, recorded aborted, exit %i, and the log says so',
    async (signal, code) => {
      const sim = await upstream(3000);
      const env = envFor(sim, { REPORTS_FAILPOINT: 'after-batch@1500' });
      const proc = spawnCli(['sync', '--source', 'ndjson'], env);
      await proc.waitFor(/failpoint after-batch reached/);
      const out = await stopped(proc, signal);
      expect(out.code, out.stderr).toBe(code);
      expect(await runRows(env.REPORTS_WAREHOUSE)).toEqual([{ source: 'ndjson', status: 'aborted' }]);
      expect(out.stderr).toMatch(ABORTING);
      expect(out.stderr).not.toMatch(MERGING);
    },
  );

  it.each(['in-merge', 'after-commit'] as const)(
    'SIGINT %s: the run commits, succeeded, exit 0, and no line promises an abort',
    async (point) => {
      const sim = await upstream(3000);
      const env = envFor(sim, { REPORTS_FAILPOINT: `${point}@1500` });
      const proc = spawnCli(['sync', '--source', 'ndjson'], env);
      await proc.waitFor(new RegExp(`failpoint ${point} reached`));
      const out = await stopped(proc, 'SIGINT');
      expect(out.code, out.stderr).toBe(0);
      expect(await runRows(env.REPORTS_WAREHOUSE)).toEqual([{ source: 'ndjson', status: 'succeeded' }]);
      expect(out.stdout).toContain('SUCCEEDED');
      expect(out.stderr).toMatch(MERGING);
      expect(out.stderr).not.toMatch(/recorded as aborted/);
    },
  );

  it('SIGINT while `all` merges its NDJSON run: that run commits, the CSV run never starts, exit 130', async () => {
    const sim = await upstream(2000);
    const env = envFor(sim, { REPORTS_FAILPOINT: 'in-merge@1500' });
    const proc = spawnCli(['sync', '--source', 'all'], env);
    await proc.waitFor(/failpoint in-merge reached/);
    const out = await stopped(proc, 'SIGINT');
    expect(out.code, out.stderr).toBe(130);
    expect(await runRows(env.REPORTS_WAREHOUSE)).toEqual([{ source: 'ndjson', status: 'succeeded' }]);
    expect(out.stderr).toMatch(/stopped by the signal before every run of the target started/);
  });

  it('SIGINT as the summary is printed (the run committed): exit 0, unless Node was already exiting with 0', async () => {
    const sim = await upstream(2000);
    // The process ends a few dozen ms after it printed: signals land before, while and after it cleans up.
    // Only once Node itself exits (the exit code decided: 0) does the runtime's default take a signal.
    for (const delay of [0, 10, 20, 30, 40, 60, 80, 120]) {
      const env = envFor(sim);
      const proc = spawnCli(['sync', '--source', 'ndjson'], env, ['--import', EXIT_MARKER]);
      await proc.waitFor(/SUCCEEDED/);
      await new Promise((resolve) => setTimeout(resolve, delay));
      const out = await stopped(proc, 'SIGINT');
      if (out.code !== 0) expect(out.stderr, `killed at ${delay} ms`).toContain('process exiting with 0');
      else expect(out.stderr).toContain('process exiting with 0');
      expect(await runRows(env.REPORTS_WAREHOUSE)).toEqual([{ source: 'ndjson', status: 'succeeded' }]);
    }
  }, 60_000);

  it('at moments spread over a whole run: the exit code always matches the run row', async () => {
    const sim = await upstream(20_000);
    // How long an undisturbed run takes, from the spawn to the exit.
    const env0 = envFor(sim);
    const started = Date.now();
    const whole = spawnCli(['sync', '--source', 'ndjson'], env0);
    expect((await whole.exited).code).toBe(0);
    const duration = Date.now() - started;
    const seen = new Set<string>();
    for (let i = 0; i <= 10; i++) {
      const env = envFor(sim);
      const proc = spawnCli(['sync', '--source', 'ndjson'], env, ['--import', EXIT_MARKER]);
      await new Promise((resolve) => setTimeout(resolve, Math.round((duration * i) / 10)));
      const out = await stopped(proc, 'SIGINT');
      const rows = await runRows(env.REPORTS_WAREHOUSE);
      const status = rows[0]?.status ?? 'none';
      seen.add(status);
      const where = `at ${Math.round((duration * i) / 10)} ms of ${duration}: exit ${out.code} ${out.signal}, ${status}\n${out.stderr}`;
      expect(rows.length, where).toBeLessThanOrEqual(1);
      // Node's own exit, once the code is decided, may still be cut by the signal (docs/deployment.md).
      if (status === 'succeeded')
        expect(out.code === 0 || /process exiting with 0/.test(out.stderr), where).toBe(true);
      else if (status === 'aborted') expect(out.code === 130 || out.signal === 'SIGINT', where).toBe(true);
      else {
        // Before the warehouse was open (no handler yet): the process ends by the signal itself.
        expect(status, where).toBe('none');
        expect(out.code === 130 || out.signal === 'SIGINT', where).toBe(true);
      }
      if (ABORTING.test(out.stderr)) expect(status, where).toBe('aborted');
      if (MERGING.test(out.stderr)) expect(status, where).toBe('succeeded');
    }
    expect(seen.has('aborted') || seen.has('succeeded')).toBe(true);
  }, 240_000);
});

describe('a signal to the daemon during a job', () => {
  it.each([
    ['after-batch@4000', 'aborted', /grace period over: aborting the running job \(its run is not merged/],
    ['in-merge@4000', 'succeeded', /grace period over while the running job merges: a merge is never cut/],
  ] as const)(
    '%s: the run row is %s, the log says what happened, exit 0',
    async (point, status, line) => {
      const sim = await upstream(3000);
      const env = envFor(sim, {
        REPORTS_FAILPOINT: point,
        REPORTS_SHUTDOWN_GRACE_MS: '300',
        REPORTS_SCHEDULE_SNAPSHOT_STATS: 'off',
        REPORTS_SCHEDULE_SYNC_CSV: 'off',
        REPORTS_SCHEDULE_SYNC_RECENT: 'off',
      });
      // A warehouse that never synced: the NDJSON job runs at once as its catch-up.
      const proc = spawnCli(['run', '--port', '0'], env);
      await proc.waitFor(new RegExp(`failpoint ${point.split('@')[0]} reached`));
      const out = await stopped(proc, 'SIGTERM');
      expect(out.code, out.stderr).toBe(0);
      expect(await runRows(env.REPORTS_WAREHOUSE)).toEqual([{ source: 'ndjson', status }]);
      expect(out.stderr).toMatch(line);
    },
    60_000,
  );
});

describe('a signal as soon as the daemon says it listens', () => {
  it('stops it gracefully (exit 0), never kills it with a run left running', async () => {
    const sim = await upstream(3000);
    for (let i = 0; i < 4; i++) {
      const env = envFor(sim, { REPORTS_SCHEDULE_SNAPSHOT_STATS: 'off', REPORTS_SCHEDULE_SYNC_CSV: 'off' });
      const proc = spawnCli(['run', '--port', '0'], env);
      await proc.waitFor(/^listening on/m);
      const out = await stopped(proc, 'SIGTERM');
      expect(out.code, `${out.signal}\n${out.stderr}`).toBe(0);
      for (const row of await runRows(env.REPORTS_WAREHOUSE)) expect(row.status).not.toBe('running');
    }
  }, 120_000);
});

describe('a signal to demo and serve', () => {
  it.each([
    ['in-merge@1500', 0, 'succeeded'],
    ['after-batch@1500', 130, 'aborted'],
  ] as const)(
    'demo, SIGINT at %s: exit %i, the run row %s',
    async (point, code, status) => {
      const tmp = tempDir('reports-sync-signal-');
      onTestFinished(() => tmp.cleanup());
      const path = join(tmp.dir, 'demo.duckdb');
      const proc = spawnCli(['demo'], {
        REPORTS_WAREHOUSE: path,
        REPORTS_BATCH_SIZE: '500',
        REPORTS_LOG_LEVEL: 'info',
        REPORTS_FAILPOINT: point,
      });
      await proc.waitFor(new RegExp(`failpoint ${point.split('@')[0]} reached`));
      const out = await stopped(proc, 'SIGINT');
      expect(out.code, out.stderr).toBe(code);
      expect(await runRows(path)).toEqual([{ source: 'ndjson', status }]);
    },
    60_000,
  );

  it('serve, SIGINT: exit 0, the run log as it was', async () => {
    const sim = await upstream(500);
    const env = envFor(sim);
    const sync = spawnCli(['sync', '--source', 'ndjson'], env);
    expect((await sync.exited).code).toBe(0);
    const serve = spawnCli(['serve', '--port', '0'], env);
    await serve.waitFor(/^listening on/m);
    const out = await stopped(serve, 'SIGINT');
    expect(out.code, `${out.stdout}\n${out.stderr}`).toBe(0);
    expect(await runRows(env.REPORTS_WAREHOUSE)).toEqual([{ source: 'ndjson', status: 'succeeded' }]);
  }, 60_000);
});
