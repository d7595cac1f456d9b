import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/database.js';
import { CLI, runCli } from '../helpers/cli.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

const PAGE_SIZE = 25;
/** Row 3 of every page is ragged: each page commits a reject too, so resume must carry rejects over. */
const WARTS = ['csv:csvWart=raggedRow,at=3'];
// 600 generated reports = 24 pages; with 150 ms before each page the run takes seconds, time to kill it.
const SLOW = [...WARTS, 'csv:latency=150'];

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

function env(sim: TestSimulator, warehouse: string): Record<string, string> {
  // One page per batch (commit): resume granularity is what is tested here.
  return {
    REPORTS_BASE_URL: sim.url,
    REPORTS_WAREHOUSE: warehouse,
    REPORTS_LOG_LEVEL: 'warn',
    REPORTS_BATCH_SIZE: String(PAGE_SIZE),
  };
}

function pageRequests(sim: TestSimulator): number[] {
  return sim
    .requests()
    .filter((r) => r.path.startsWith('/api/v1/public/exports/reports.csv'))
    .map((r) => Number(new URL(r.path, sim.url).searchParams.get('page')));
}

/**
 * Starts `reports-sync sync --source csv` (the built CLI) and SIGKILLs it once the simulator has been asked
 * for page `page`. The CLI fetches up to three pages ahead of the one it stages (page N is requested once
 * page N-3 is taken), and a page commits in the background while the next is staged, so pages 1…page-5
 * are committed for sure. Resolves with the killed process's exit signal.
 */
async function killDuringExport(sim: TestSimulator, warehouse: string, page: number): Promise<string | null> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REPORTS_')));
  const child = spawn(process.execPath, [CLI, 'sync', '--source', 'csv', '--page-size', String(PAGE_SIZE)], {
    env: { ...base, ...env(sim, warehouse), REPORTS_LOG_PRETTY: 'false' },
    stdio: 'ignore',
  });
  const exited = new Promise<string | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  );
  const deadline = Date.now() + 45_000;
  while (!pageRequests(sim).includes(page)) {
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the CLI never asked for page ${page}`);
    }
    await sleep(10);
  }
  child.kill('SIGKILL');
  return exited;
}

/**
 * Differences between two warehouses' reports, versions and the rejects of their succeeded runs (business
 * content, not run ids or times). An interrupted run that was not resumed keeps its own rejects.
 */
async function differences(a: string, b: string): Promise<Record<string, unknown[]>> {
  const w = await openWarehouse(a, { readOnly: true });
  const c = await w.connect();
  try {
    await c.run(`ATTACH '${b}' AS b (READ_ONLY)`);
    const tables: Record<string, (db: string) => string> = {
      reports: (db) =>
        `SELECT id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra,
           content_hash FROM ${db}.reports`,
      report_versions: (db) =>
        `SELECT id, change, status, destination, description, extra, content_hash FROM ${db}.report_versions`,
      rejected_records: (db) =>
        `SELECT source, location, line, page, "row", record_id, raw, issues::VARCHAR AS issues
         FROM ${db}.rejected_records
         WHERE run_id IN (SELECT run_id FROM ${db}.sync_runs WHERE status = 'succeeded')`,
    };
    const [own] = await query(c, 'SELECT current_database() AS db');
    const here = String(own?.db);
    const out: Record<string, unknown[]> = {};
    for (const [table, sql] of Object.entries(tables)) {
      out[table] = [
        ...(await query(c, `${sql(here)} EXCEPT ALL ${sql('b')}`)),
        ...(await query(c, `${sql('b')} EXCEPT ALL ${sql(here)}`)),
      ];
    }
    return out;
  } finally {
    c.closeSync();
    w.close();
  }
}

/** A reference warehouse: the same export synced in one uninterrupted run. */
async function uninterrupted(sim: TestSimulator, path: string): Promise<Record<string, unknown>> {
  const config = testConfig(sim.url, path, { csvPageSize: PAGE_SIZE });
  const warehouse = await openTestWarehouse(config);
  try {
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('succeeded');
    return run?.counters as unknown as Record<string, unknown>;
  } finally {
    warehouse.close();
  }
}

const COUNTERS = `records_read AS "recordsRead", records_loaded AS "recordsLoaded", records_rejected AS "recordsRejected",
  inserted, duplicates, pages, bytes_read AS "bytesRead"`;

describe('CSV resume after SIGKILL', () => {
  it('goes on from the page after the last checkpoint and ends with the warehouse of an uninterrupted run', async () => {
    const sim = await startTestSimulator({ generate: { n: 600, seed: 3 }, faults: SLOW });
    const path = join(tmp.dir, 'resumed.duckdb');
    expect(await killDuringExport(sim, path, 10)).toBe('SIGKILL');

    sim.setFaults(WARTS);
    sim.clearRequests();
    const second = await runCli(
      ['sync', '--source', 'csv', '--page-size', String(PAGE_SIZE)],
      env(sim, path),
    );
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/resumed: pages 1–\d+ adopted from interrupted run/);
    const asked = pageRequests(sim);

    const reference = join(tmp.dir, 'reference.duckdb');
    const expected = await uninterrupted(sim, reference);

    const w = await openWarehouse(path, { readOnly: true });
    let runs: Record<string, unknown>[];
    let leftovers: Record<string, unknown>[];
    try {
      runs = await query(
        w,
        `SELECT run_id, status, error->>'$.code' AS code, resumed_from_run, resumed_at_page, ${COUNTERS}
         FROM sync_runs ORDER BY started_at`,
      );
      leftovers = await query(
        w,
        'SELECT (SELECT count(*) FROM staging_reports) AS staged, (SELECT count(*) FROM sync_checkpoints) AS checkpoints',
      );
    } finally {
      w.close();
    }
    const [killed, resumed] = runs;
    // Its pages, rejects and counters went to the run that resumed it: each record is counted once.
    expect(killed).toMatchObject({
      status: 'aborted',
      code: 'RUN_INTERRUPTED',
      recordsRead: 0,
      recordsLoaded: 0,
      recordsRejected: 0,
      pages: 0,
      bytesRead: 0,
    });
    expect(resumed).toMatchObject({ status: 'succeeded', resumed_from_run: killed?.run_id });
    const from = Number(resumed?.resumed_at_page);
    // Killed when it asked for page 10: pages 1–5 were committed at least (see killDuringExport).
    expect(from).toBeGreaterThanOrEqual(6);
    // Page 1 once, to check the export's validator, then only the pages after the last checkpoint.
    expect(asked).toEqual([1, ...Array.from({ length: 25 - from }, (_, i) => from + i)]);
    // Same counters, same rows, versions and rejects as one uninterrupted run.
    const {
      run_id: _r,
      status: _s,
      code: _c,
      resumed_from_run: _f,
      resumed_at_page: _p,
      ...counters
    } = resumed ?? {};
    expect(counters).toEqual({
      recordsRead: expected.recordsRead,
      recordsLoaded: expected.recordsLoaded,
      recordsRejected: expected.recordsRejected,
      inserted: expected.inserted,
      duplicates: expected.duplicates,
      pages: expected.pages,
      bytesRead: expected.bytesRead,
    });
    expect(expected).toMatchObject({ recordsRead: 600, recordsRejected: 24, pages: 24 });
    expect(await differences(path, reference)).toEqual({
      reports: [],
      report_versions: [],
      rejected_records: [],
    });
    expect(leftovers[0]).toEqual({ staged: 0, checkpoints: 0 });
  });

  it('does not resume with another page size, and says why', async () => {
    const sim = await startTestSimulator({ generate: { n: 300, seed: 3 }, faults: SLOW });
    const path = join(tmp.dir, 'other-size.duckdb');
    expect(await killDuringExport(sim, path, 7)).toBe('SIGKILL'); // pages 1–2 committed at least
    sim.setFaults(WARTS);
    sim.clearRequests();
    const second = await runCli(['sync', '--source', 'csv', '--page-size', '50'], {
      ...env(sim, path),
      REPORTS_LOG_LEVEL: 'info',
    });
    expect(second.code, second.stderr).toBe(0);
    const notResumed = second.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; reason?: string })
      .find((l) => l.msg.startsWith('not resuming'));
    expect(notResumed?.reason).toBe(`it used pageSize ${PAGE_SIZE}`);
    expect(pageRequests(sim)).toEqual([1, 2, 3, 4, 5, 6]);
    const w = await openWarehouse(path, { readOnly: true });
    try {
      const [n] = await query(
        w,
        'SELECT count(*) AS n, count(*) FILTER (WHERE removed_at IS NULL) AS current FROM reports',
      );
      // 300 reports, one ragged row in each of the 6 pages of 50.
      expect(n).toEqual({ n: 294, current: 294 });
      const [left] = await query(w, 'SELECT count(*) AS n FROM staging_reports');
      expect(left?.n).toBe(0);
    } finally {
      w.close();
    }
  });

  it('starts again from page 1 when the export changed since the interrupted run', async () => {
    const sim = await startTestSimulator({ generate: { n: 600, seed: 3 }, faults: SLOW });
    const path = join(tmp.dir, 'restarted.duckdb');
    expect(await killDuringExport(sim, path, 8)).toBe('SIGKILL'); // pages 1–3 committed at least

    sim.advanceDays(1); // a new export version: new ETag, new, moved and unpublished reports
    sim.setFaults(WARTS);
    sim.clearRequests();
    const second = await runCli(
      ['sync', '--source', 'csv', '--page-size', String(PAGE_SIZE)],
      env(sim, path),
    );
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).not.toContain('resumed:');
    // Page 1 to check the validator, then every page from 1 again.
    expect(pageRequests(sim).slice(0, 3)).toEqual([1, 1, 2]);

    const reference = join(tmp.dir, 'reference.duckdb');
    const expected = await uninterrupted(sim, reference);
    const w = await openWarehouse(path, { readOnly: true });
    try {
      const [last] = await query(
        w,
        `SELECT resumed_from_run, ${COUNTERS} FROM sync_runs ORDER BY started_at DESC LIMIT 1`,
      );
      expect(last).toMatchObject({
        resumed_from_run: null,
        recordsRead: expected.recordsRead,
        pages: expected.pages,
      });
      const [left] = await query(w, 'SELECT count(*) AS n FROM staging_reports');
      expect(left?.n).toBe(0);
    } finally {
      w.close();
    }
    expect(await differences(path, reference)).toEqual({
      reports: [],
      report_versions: [],
      rejected_records: [],
    });
  });
});
