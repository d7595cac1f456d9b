import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ConfigOverrides } from '../../src/config/config.js';
import { contentHash } from '../../src/schema/wire-format.js';
import type { Dataset } from '../../src/simulator/dataset.js';
import { generateDataset } from '../../src/simulator/generate.js';
import { startSimulator } from '../../src/simulator/server.js';
import { csvSource } from '../../src/sync/sources/csv-source.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import {
  expectedReports,
  expectRunAccounted,
  expectWarehouseHolds,
  warehouseFingerprint,
} from '../helpers/reliability.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

// Issue 6, case 2 for the paged CSV export: each fault switch with its outcome, the run recorded in
// sync_runs, loaded + rejected = read, and every loaded row equal, byte for byte, to the upstream's report.
// 200 reports in pages of 50 (4 pages + the empty or short end).

const N = 200;
const PAGE = { csvPageSize: 50 };

async function setup(faults: string[], overrides: ConfigOverrides = {}) {
  const tmp = tempDir('reports-sync-csv-faults-');
  const dataset = generateDataset(N, 9);
  const sim = await startSimulator({ dataset });
  const path = join(tmp.dir, 'w.duckdb');
  const warehouse = await openTestWarehouse(testConfig(sim.url, path));
  onTestFinished(async () => {
    warehouse.close();
    await sim.close();
    tmp.cleanup();
  });
  const sync = async () => {
    const run = await syncOnce(warehouse, testConfig(sim.url, path, { ...PAGE, ...overrides }), csvSource);
    const row = await expectRunAccounted(warehouse, run.runId);
    expect(row.status).toBe(run.status);
    return run;
  };
  return { sim, dataset, warehouse, sync, setFaults: () => sim.setFaults(faults) };
}

/** Every row in `reports` is the upstream's report of that id, text byte for byte. Returns the row count. */
async function expectRowsAreUpstreamReports(db: Warehouse, dataset: Dataset): Promise<number> {
  const rows = await query(db, 'SELECT id, category, description, address, content_hash FROM reports');
  for (const row of rows) {
    const report = dataset.snapshot().getReport(String(row.id));
    expect(report, `report ${String(row.id)} upstream`).toBeDefined();
    expect(row).toEqual({
      id: report?.id,
      category: report?.category,
      description: report?.description,
      address: report?.address,
      content_hash: report ? contentHash(report) : undefined,
    });
  }
  return rows.length;
}

describe('CSV export faults: retried and succeeded (case 2)', () => {
  it.each([
    ['csv:status=503,retryAfter=1,times=1', {}],
    ['csv:status=429,retryAfter=1,retryAfterForm=date,times=1', {}],
    ['csv:reset=3000,times=1', {}],
    ['csv:cut=3000,times=1', {}],
    ['csv:chunkedCut=3000,times=1', {}],
    ['csv:stall=3000,times=1', { bodyTimeoutMs: 300 }],
    ['csv:latency=1500,times=1', { headersTimeoutMs: 200 }],
    ['csv:regenerate,times=1', {}],
    ['csv:duplicates=3', {}],
  ] as const)('%s', async (fault, overrides) => {
    const ctx = await setup([fault], overrides);
    ctx.setFaults();
    const run = await ctx.sync();
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('succeeded');
    expect(run.counters.recordsRejected).toBe(0);
    await expectWarehouseHolds(ctx.warehouse, expectedReports(ctx.dataset));
  });
});

describe('CSV export faults: quarantined records (case 2)', () => {
  it.each([
    'csv:csvWart=unclosedQuote,at=3',
    'csv:csvWart=strayQuote,at=3',
    'csv:csvWart=raggedRow,at=3',
    'csv:csvWart=bom',
    'csv:csvWart=mixedNewlines,at=3',
    'csv:csvWart=blankLines,at=3',
  ])('%s: loaded + rejected = read, every loaded row byte for byte', async (fault) => {
    const ctx = await setup([fault], { maxRejectRatio: 0.2 });
    ctx.setFaults();
    const run = await ctx.sync();
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('succeeded');
    const loaded = await expectRowsAreUpstreamReports(ctx.warehouse, ctx.dataset);
    // Nothing vanished: every report is either in the warehouse or quarantined.
    const [q] = await query(ctx.warehouse, `SELECT count(*) AS n FROM rejected_records WHERE run_id = $run`, {
      run: run.runId,
    });
    expect(q?.n).toBe(run.counters.recordsRejected);
    expect(loaded + run.counters.recordsRejected).toBeGreaterThanOrEqual(N);
    expect(run.counters.recordsLoaded).toBe(loaded + run.counters.duplicates);
  });

  it('a multi-MB field over the cap is quarantined, not loaded', async () => {
    const ctx = await setup(['csv:giant=3000000,at=2'], { maxRecordBytes: 1024 * 1024 });
    ctx.setFaults();
    const run = await ctx.sync();
    expect(run.status).toBe('succeeded');
    expect(run.counters.recordsRejected).toBeGreaterThanOrEqual(1);
    await expectRowsAreUpstreamReports(ctx.warehouse, ctx.dataset);
  });
});

describe('CSV export faults: failed cleanly (case 2)', () => {
  it.each([
    ['csv:redirect=loop', 'REDIRECT_LIMIT'],
    ['csv:redirect=login', 'UNEXPECTED_CONTENT_TYPE'],
    ['csv:status=503', 'HTTP_STATUS'],
  ] as const)('%s → %s naming the URL, nothing merged', async (fault, code) => {
    const ctx = await setup([fault], { retries: 2 });
    expect((await ctx.sync()).status).toBe('succeeded');
    const before = await warehouseFingerprint(ctx.warehouse);
    ctx.sim.advanceDays(2);
    ctx.setFaults();
    const run = await ctx.sync();
    expect(run.status).toBe('failed');
    expect(run.error?.code).toBe(code);
    expect(run.error?.message).toContain(ctx.sim.url);
    expect(await warehouseFingerprint(ctx.warehouse)).toEqual(before);
  });

  it('csv:ignorePage: stops, keeps what it read, marks the run incomplete, removes nothing', async () => {
    const ctx = await setup(['csv:ignorePage']);
    ctx.setFaults();
    const run = await ctx.sync();
    expect(run.status).toBe('succeeded');
    const [row] = await query(ctx.warehouse, 'SELECT complete, removed FROM sync_runs WHERE run_id = $run', {
      run: run.runId,
    });
    expect(row).toEqual({ complete: false, removed: 0 });
    expect(await expectRowsAreUpstreamReports(ctx.warehouse, ctx.dataset)).toBe(50);
  });
});
