import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';
import { generateDataset } from '../../src/simulator/generate.js';
import { syncTarget } from '../../src/sync/sync-sources.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { silentLogger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { expectRunAccounted, warehouseFingerprint, waitUntil } from '../helpers/reliability.js';
import { openTestWarehouse, query as q, tempDir, testConfig } from '../helpers/sync.js';

// Issue 6, case 1: SIGKILL of `reports-sync sync` (the built CLI in a child process) at several points.
// Each time the file opens afterwards with only committed data (the state of the last successful run, or
// the new one when the kill came after the commit), and the next run converges to the warehouse an
// undisturbed run produces. The exact points come from the failpoints of src/util/failpoint.ts; the
// download is caught by a stalled body. Run lists below are those of the NDJSON export (`source = 'ndjson'`).

const EXPORT_PATH = '/api/v1/public/reports.ndjson';

interface World {
  sim: SimulatorHandle;
  path: string;
  env: Record<string, string>;
  /** Fingerprints of an undisturbed warehouse after the first and after the second export state. */
  before: unknown;
  after: unknown;
}

/**
 * A simulator, the warehouse under test synced once by the CLI (state 1), the upstream moved on two days
 * (state 2), and the fingerprints an undisturbed warehouse has after states 1 and 2 (synced in-process by
 * the function behind `reports-sync sync`, so it does whatever the CLI's default sync does).
 */
async function world(): Promise<World> {
  const tmp = tempDir('reports-sync-kill-');
  const sim = await startSimulator({ dataset: generateDataset(300, 11) });
  onTestFinished(async () => {
    await sim.close();
    tmp.cleanup();
  });
  const path = join(tmp.dir, 'w.duckdb');
  const env = {
    REPORTS_BASE_URL: sim.url,
    REPORTS_WAREHOUSE: path,
    REPORTS_BATCH_SIZE: '50',
    REPORTS_RETRY_BASE_MS: '10',
    REPORTS_BODY_TIMEOUT_MS: '30000',
    REPORTS_LOG_LEVEL: 'info',
  };
  const first = await runCli(['sync'], env);
  expect(first.code, first.stderr).toBe(0);

  const refConfig = testConfig(sim.url, join(tmp.dir, 'reference.duckdb'));
  const reference = await openTestWarehouse(refConfig);
  try {
    await syncLikeTheCli(reference, refConfig);
    const before = await warehouseFingerprint(reference);
    sim.advanceDays(2);
    await syncLikeTheCli(reference, refConfig);
    const after = await warehouseFingerprint(reference);
    expect(after).not.toEqual(before); // the two states differ, so the comparisons below can fail
    return { sim, path, env, before, after };
  } finally {
    reference.close();
  }
}

async function syncLikeTheCli(warehouse: Warehouse, config: ReturnType<typeof testConfig>) {
  const dispatcher = createHttpAgent(config);
  try {
    const runs = await syncTarget({
      warehouse,
      config,
      dispatcher,
      logger: silentLogger(),
      target: 'default',
    });
    expect(runs.map((r) => r.status)).toEqual(runs.map(() => 'succeeded'));
  } finally {
    await dispatcher.close();
  }
}

/** Opens the killed file read-only, as an analyst would, without any repair by our code. */
async function inspect(path: string) {
  const w = await openWarehouse(path, { readOnly: true });
  try {
    const runs = await q(
      w,
      `SELECT run_id, status FROM sync_runs WHERE source = 'ndjson' ORDER BY started_at`,
    );
    // Records of a batch are staged rows, or hashes of known (unchanged) lines when not only marked.
    const [staged] = await q(
      w,
      `SELECT (SELECT count(*) FROM staging_reports) + (SELECT count(*) FROM staging_seen) AS n,
         (SELECT max(records_loaded) FROM sync_checkpoints) AS checkpointed`,
    );
    return {
      fingerprint: await warehouseFingerprint(w),
      runs,
      staged: Number(staged?.n),
      checkpointed: Number(staged?.checkpointed),
    };
  } finally {
    w.close();
  }
}

/** When the last batch of the run a kill left `running` was committed (its checkpoints' latest). */
async function lastCheckpointAt(path: string): Promise<string> {
  const w = await openWarehouse(path, { readOnly: true });
  try {
    const [row] = await q(w, `SELECT max(committed_at)::VARCHAR AS at FROM sync_checkpoints`);
    return String(row?.at);
  } finally {
    w.close();
  }
}

/** Runs the sync again to the end and returns the warehouse's fingerprint and run log. */
async function rerun(w: World) {
  const again = await runCli(['sync'], w.env);
  expect(again.code, again.stderr).toBe(0);
  const warehouse = await openWarehouse(w.path);
  try {
    const runs = await q(
      warehouse,
      `SELECT run_id, status, error->>'code' AS code FROM sync_runs WHERE source = 'ndjson' ORDER BY started_at`,
    );
    for (const run of runs) await expectRunAccounted(warehouse, String(run.run_id));
    const [left] = await q(
      warehouse,
      `SELECT (SELECT count(*) FROM staging_reports) + (SELECT count(*) FROM staging_seen)
         + (SELECT count(*) FROM sync_checkpoints) AS n`,
    );
    expect(left?.n).toBe(0);
    return { fingerprint: await warehouseFingerprint(warehouse), runs };
  } finally {
    warehouse.close();
  }
}

describe('SIGKILL of a sync (case 1)', () => {
  it('during the download: the file holds the previous run; the next run converges', async () => {
    const w = await world();
    w.sim.setFaults(['ndjson:stall=40000,times=1']);
    w.sim.clearRequests();
    const proc = spawnCli(['sync'], w.env);
    // Its export request arrived: 40 kB of body are sent, then the body stalls (for 30 s, the body
    // timeout), so the sync is inside its download until the kill.
    await waitUntil(() => w.sim.requests().some((r) => r.path === EXPORT_PATH));
    proc.child.kill('SIGKILL');
    expect((await proc.exited).signal).toBe('SIGKILL');
    expect(w.sim.faults()[0]?.used).toBe(1);

    const killed = await inspect(w.path);
    expect(killed.fingerprint).toEqual(w.before);
    expect(killed.runs.map((r) => r.status)).toEqual(['succeeded', 'running']);

    const next = await rerun(w);
    expect(next.fingerprint).toEqual(w.after);
    expect(next.runs.map((r) => [r.status, r.code])).toEqual([
      ['succeeded', null],
      ['aborted', 'RUN_INTERRUPTED'],
      ['succeeded', null],
    ]);
  });

  it('during staging (batches committed, export unfinished): staged rows are not visible as reports', async () => {
    const w = await world();
    const proc = spawnCli(['sync'], { ...w.env, REPORTS_FAILPOINT: 'after-batch' });
    await proc.waitFor(/failpoint after-batch reached/);
    proc.child.kill('SIGKILL');
    await proc.exited;

    const killed = await inspect(w.path);
    // One committed batch, really in the file: at least REPORTS_BATCH_SIZE records (NDJSON lines are decoded
    // in blocks of ~1 MiB, so a batch ends at a block's end) by its checkpoint. Its changed lines are staged;
    // its known lines are only marked in the run's memory (an NDJSON run is never resumed: it reads again).
    expect(killed.checkpointed).toBeGreaterThanOrEqual(50);
    expect(killed.staged).toBeLessThanOrEqual(killed.checkpointed);
    expect(killed.fingerprint).toEqual(w.before);
    expect(killed.runs.map((r) => r.status)).toEqual(['succeeded', 'running']);
    const lastSign = await lastCheckpointAt(w.path);

    await new Promise((resolve) => setTimeout(resolve, 1200));
    const next = await rerun(w);
    expect(next.fingerprint).toEqual(w.after);
    expect(next.runs.map((r) => r.status)).toEqual(['succeeded', 'aborted', 'succeeded']);
    // The killed run ended at its last committed batch, not when the next run found it.
    const reader = await openWarehouse(w.path, { readOnly: true });
    try {
      const [aborted] = await q(
        reader,
        `SELECT finished_at::VARCHAR AS finished,
           (SELECT max(started_at) FROM sync_runs)::VARCHAR AS next_started
         FROM sync_runs WHERE status = 'aborted'`,
      );
      expect(aborted?.finished).toBe(lastSign);
      expect(String(aborted?.finished) < String(aborted?.next_started)).toBe(true);
    } finally {
      reader.close();
    }
  });

  it('during the merge transaction: nothing of the merge is in the file', async () => {
    const w = await world();
    const proc = spawnCli(['sync'], { ...w.env, REPORTS_FAILPOINT: 'in-merge' });
    await proc.waitFor(/failpoint in-merge reached/);
    proc.child.kill('SIGKILL');
    await proc.exited;

    const killed = await inspect(w.path);
    expect(killed.fingerprint).toEqual(w.before);
    expect(killed.runs.map((r) => r.status)).toEqual(['succeeded', 'running']);
    expect(killed.staged).toBeGreaterThan(0); // the whole export was staged, the merge not committed

    const next = await rerun(w);
    expect(next.fingerprint).toEqual(w.after);
    expect(next.runs.map((r) => r.status)).toEqual(['succeeded', 'aborted', 'succeeded']);
  });

  it('between two slices of the merge: nothing of the merge is in the file, and the next run finishes it', async () => {
    const w = await world();
    // Slices of 5 staged reports: the day's changes take several, all in the merge's one transaction.
    const env = { ...w.env, REPORTS_FAILPOINT: 'merge-slice', REPORTS_MERGE_SLICE_ROWS: '5' };
    const proc = spawnCli(['sync'], env);
    await proc.waitFor(/failpoint merge-slice reached/);
    proc.child.kill('SIGKILL');
    await proc.exited;

    const killed = await inspect(w.path);
    expect(killed.fingerprint).toEqual(w.before);
    expect(killed.runs.map((r) => r.status)).toEqual(['succeeded', 'running']);
    expect(killed.staged).toBeGreaterThan(5);

    const next = await rerun(w);
    expect(next.fingerprint).toEqual(w.after);
    expect(next.runs.map((r) => r.status)).toEqual(['succeeded', 'aborted', 'succeeded']);
  });

  it('after the commit, before anything else: the run is complete; the next run changes nothing', async () => {
    const w = await world();
    const proc = spawnCli(['sync'], { ...w.env, REPORTS_FAILPOINT: 'after-commit' });
    await proc.waitFor(/failpoint after-commit reached/);
    proc.child.kill('SIGKILL');
    await proc.exited;

    const killed = await inspect(w.path);
    expect(killed.fingerprint).toEqual(w.after);
    expect(killed.runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect(killed.staged).toBe(0);

    const next = await rerun(w);
    expect(next.fingerprint).toEqual(w.after);
    expect(next.runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });

  it('after the commit, before its checkpoint: the log replays the run whole; the next run changes nothing', async () => {
    const w = await world();
    const proc = spawnCli(['sync'], { ...w.env, REPORTS_FAILPOINT: 'merge-logged' });
    await proc.waitFor(/failpoint merge-logged reached/);
    proc.child.kill('SIGKILL');
    await proc.exited;
    // The merge is in the write-ahead log only, as a crash there leaves it.
    expect(statSync(`${w.path}.wal`).size).toBeGreaterThan(0);

    const killed = await inspect(w.path);
    expect(killed.fingerprint).toEqual(w.after);
    expect(killed.runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    expect(killed.staged).toBe(0);

    const next = await rerun(w);
    expect(next.fingerprint).toEqual(w.after);
    expect(next.runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });

  it('while sorting the rows a moved split left behind: the run stands, and the next run finishes the sort', async () => {
    const w = await world();
    // A sort under way (as a crash between slices leaves it): every row, none done yet past 1900.
    const planted = await openWarehouse(w.path);
    try {
      await q(
        planted,
        `INSERT INTO reader_sort_pending SELECT '-infinity'::TIMESTAMPTZ, max(last_changed_at),
           '1900-01-01'::TIMESTAMPTZ FROM report_rows`,
      );
    } finally {
      planted.close();
    }
    const proc = spawnCli(['sync'], { ...w.env, REPORTS_FAILPOINT: 'sort-slice' });
    await proc.waitFor(/failpoint sort-slice reached/);
    proc.child.kill('SIGKILL');
    await proc.exited;

    // The run committed before the sort began; the slice under way rolled back, the sort is still to do.
    const killed = await inspect(w.path);
    expect(killed.fingerprint).toEqual(w.after);
    expect(killed.runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    const left = await openWarehouse(w.path, { readOnly: true });
    try {
      expect(await q(left, 'SELECT count(*)::INT AS n FROM reader_sort_pending')).toEqual([{ n: 1 }]);
    } finally {
      left.close();
    }

    const next = await rerun(w);
    expect(next.fingerprint).toEqual(w.after);
    const done = await openWarehouse(w.path, { readOnly: true });
    try {
      expect(await q(done, 'SELECT count(*)::INT AS n FROM reader_sort_pending')).toEqual([{ n: 0 }]);
      // The rows the sort covered (those the first run wrote; the killed run's changes came after it) lie
      // in createdAt order.
      const rows = await q(
        done,
        `SELECT epoch_us(created_at) AS t FROM report_rows WHERE last_changed_at <= (
           SELECT min(finished_at) FROM sync_runs WHERE source = 'ndjson' AND status = 'succeeded')
         ORDER BY rowid`,
      );
      const times = rows.map((r) => BigInt(r.t as bigint));
      expect(times.length).toBeGreaterThan(100);
      expect(times).toEqual([...times].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    } finally {
      done.close();
    }
  });
});
