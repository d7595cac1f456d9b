import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ConfigOverrides } from '../../src/config/config.js';
import type { Dataset } from '../../src/simulator/dataset.js';
import type { FaultSpec } from '../../src/simulator/faults.js';
import { garbageLine } from '../../src/simulator/record-faults.js';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import type { RunSummary } from '../../src/sync/run-sync.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import {
  expectedReports,
  expectRunAccounted,
  expectWarehouseHolds,
  warehouseFingerprint,
} from '../helpers/reliability.js';
import { testDataset } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

// Issue 6, case 2 for the NDJSON export: every fault switch of the simulator, with its expected outcome
// (retried and succeeded, or failed with an error naming the URL and the cause, with nothing merged), the
// run recorded in sync_runs, and loaded + rejected = read for every run. Case 3 (stalls, bounded retry
// time) is here too. Small datasets and short timeouts keep it fast.

const EXPORT_PATH = '/api/v1/public/reports.ndjson';

interface Ctx {
  sim: SimulatorHandle;
  dataset: Dataset;
  warehouse: Warehouse;
  /** One sync with the test config plus `overrides`; asserts the run's accounting in the warehouse. */
  sync(overrides?: ConfigOverrides): Promise<RunSummary>;
  /** The export's URL as an error must name it. */
  exportUrl: string;
}

async function setup(
  options: { n?: number; fixture?: string; overrides?: ConfigOverrides } = {},
): Promise<Ctx> {
  const tmp = tempDir('reports-sync-faults-');
  const dataset = await testDataset(
    options.fixture ? { fixture: options.fixture } : { generate: { n: options.n ?? 200, seed: 6 } },
  );
  const sim = await startSimulator({ dataset });
  const path = join(tmp.dir, 'w.duckdb');
  const warehouse = await openTestWarehouse(testConfig(sim.url, path));
  onTestFinished(async () => {
    warehouse.close();
    await sim.close();
    tmp.cleanup();
  });
  return {
    sim,
    dataset,
    warehouse,
    exportUrl: `${sim.url}${EXPORT_PATH}`,
    async sync(overrides = {}) {
      const config = testConfig(sim.url, path, { ...options.overrides, ...overrides });
      const run = await syncOnce(warehouse, config, ndjsonSource);
      const row = await expectRunAccounted(warehouse, run.runId);
      expect(row.status).toBe(run.status);
      expect(row.attempts).toBe(run.attempts);
      return run;
    },
  };
}

/** Runs with `faults` set and expects success after `attempts` attempts, with the whole export loaded. */
async function expectRecovers(ctx: Ctx, faults: Array<FaultSpec | string>, attempts: number, overrides = {}) {
  ctx.sim.setFaults(faults);
  const run = await ctx.sync(overrides);
  expect(run.error).toBeUndefined();
  expect(run.status).toBe('succeeded');
  expect(run.attempts).toBe(attempts);
  expect(run.counters.recordsRead).toBe(ctx.dataset.exportCount);
  await expectWarehouseHolds(ctx.warehouse, expectedReports(ctx.dataset));
  return run;
}

/**
 * Syncs a clean state first, moves the upstream on a day, then runs with `faults` and expects the run to
 * fail with `code` naming the URL, the warehouse exactly as before (no partial merge), and the failure in
 * sync_runs.
 */
async function expectFailsCleanly(
  ctx: Ctx,
  faults: Array<FaultSpec | string>,
  code: string,
  overrides: ConfigOverrides = {},
) {
  ctx.sim.clearFaults();
  expect((await ctx.sync()).status).toBe('succeeded');
  const before = await warehouseFingerprint(ctx.warehouse);
  ctx.sim.advanceDays(2);
  ctx.sim.setFaults(faults);
  const run = await ctx.sync(overrides);
  expect(run.status).toBe('failed');
  expect(run.error?.code).toBe(code);
  expect(await warehouseFingerprint(ctx.warehouse)).toEqual(before);
  const [row] = await query(
    ctx.warehouse,
    `SELECT status, error->>'code' AS code, error->>'message' AS message, complete FROM sync_runs WHERE run_id = $run`,
    { run: run.runId },
  );
  expect(row).toMatchObject({ status: 'failed', code, complete: false });
  expect(String(row?.message)).toBe(run.error?.message);
  return run;
}

describe('latency and stalls (cases 2 and 3)', () => {
  it('latency: a slow answer within the headers timeout just succeeds', async () => {
    const ctx = await setup();
    await expectRecovers(ctx, ['ndjson:latency=300'], 1);
  });

  it('latency past the headers timeout: the attempt times out and the retry succeeds', async () => {
    const ctx = await setup({ overrides: { headersTimeoutMs: 200 } });
    await expectRecovers(ctx, ['ndjson:latency=1500,times=1'], 2);
  });

  it('a body stalled after the headers trips the body timeout; the retry succeeds', async () => {
    const ctx = await setup({ overrides: { bodyTimeoutMs: 300 } });
    await expectRecovers(ctx, ['ndjson:stall,times=1'], 2);
  });

  it('a body stalled mid-export: the retry restarts the export and loads each record once', async () => {
    const ctx = await setup({ overrides: { bodyTimeoutMs: 300, batchSize: 25 } });
    const run = await expectRecovers(ctx, ['ndjson:stall=30000,times=1'], 2);
    expect(run.counters.duplicates).toBe(0);
  });

  it('a server that always stalls fails with UND_ERR_BODY_TIMEOUT naming the URL, within the retry budget', async () => {
    const ctx = await setup();
    // undici checks body timeouts on a coarse timer (about 1 s per attempt here, measured), hence 3 s.
    const overrides = { bodyTimeoutMs: 250, retries: 50, retryBaseMs: 10, retryMaxTimeMs: 3000 };
    const run = await expectFailsCleanly(ctx, ['ndjson:stall'], 'HTTP_NETWORK', overrides);
    expect(run.error?.message).toContain('UND_ERR_BODY_TIMEOUT');
    expect(run.error?.message).toContain(ctx.exportUrl);
    // The time budget, not the retry count, ended it: far fewer than 51 attempts were made.
    expect(run.attempts).toBeGreaterThanOrEqual(2);
    expect(run.attempts).toBeLessThan(20);
    // Generous bound (2 cores shared with other test runs): budget + one attempt's timeout + slack.
    expect(run.durationMs).toBeLessThan(3000 + 2000 + 15_000);
  });
});

describe('HTTP status faults with Retry-After (case 2)', () => {
  it('429 with Retry-After in seconds, twice: waits as asked, then succeeds', async () => {
    const ctx = await setup();
    await expectRecovers(ctx, ['ndjson:status=429,retryAfter=1,times=2'], 3);
    const arrivals = ctx.sim
      .requests()
      .filter((r) => r.path === EXPORT_PATH)
      .map((r) => Date.parse(r.at));
    expect(arrivals).toHaveLength(3);
    // Retry-After is a floor (RFC 9110 §10.2.3): each retry came at least ~1 s after the 429.
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(950);
    expect(arrivals[2]! - arrivals[1]!).toBeGreaterThanOrEqual(950);
  });

  it('503 with Retry-After as an HTTP date: waits, then succeeds', async () => {
    const ctx = await setup();
    await expectRecovers(ctx, ['ndjson:status=503,retryAfter=2,retryAfterForm=date,times=1'], 2);
    const arrivals = ctx.sim
      .requests()
      .filter((r) => r.path === EXPORT_PATH)
      .map((r) => Date.parse(r.at));
    // The date has whole seconds: "2 s ahead" is at least 1 s ahead.
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(950);
  });

  it('503 on every attempt: fails after the configured retries, naming the URL and the status', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:status=503'], 'HTTP_STATUS', { retries: 3 });
    expect(run.attempts).toBe(4);
    expect(run.error?.message).toContain(`HTTP 503 from ${ctx.exportUrl}`);
  });

  it('a Retry-After longer than the retry budget ends the run at once instead of knocking early', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:status=429,retryAfter=3600'], 'HTTP_STATUS', {
      retryMaxTimeMs: 5_000,
    });
    expect(run.attempts).toBe(1);
    expect(run.error?.message).toContain('Retry-After asks for 3600 s');
    expect(ctx.sim.requests().filter((r) => r.path === EXPORT_PATH && r.status === 429)).toHaveLength(1);
  });

  it('a 404 is not retried: the other places of an NDJSON export are asked once, then the run fails', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:status=404'], 'NDJSON_EXPORT_NOT_FOUND');
    expect(run.attempts).toBe(1);
    expect(run.error?.message).toContain(`${ctx.exportUrl}: HTTP 404`);
    // The fault answers the second request of the export path (the first read the export for the setup).
    const asked = ctx.sim.requests().filter((r) => r.path === EXPORT_PATH && r.status === 404);
    expect(asked).toHaveLength(1);
  });

  it('a 403 is not retried', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:status=403'], 'HTTP_STATUS');
    expect(run.attempts).toBe(1);
    expect(run.error?.message).toContain(`HTTP 403 from ${ctx.exportUrl}`);
  });
});

describe('broken bodies (case 2)', () => {
  it('connection reset mid-body once: the export restarts and succeeds', async () => {
    const ctx = await setup({ overrides: { batchSize: 20 } });
    const run = await expectRecovers(ctx, ['ndjson:reset=20000,times=1'], 2);
    expect(run.counters.duplicates).toBe(0);
  });

  it('connection reset on every attempt: fails with ECONNRESET naming the URL, nothing merged', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:reset=20000'], 'HTTP_NETWORK', { retries: 2 });
    expect(run.error?.message).toMatch(/ECONNRESET|UND_ERR_SOCKET/);
    expect(run.error?.message).toContain(ctx.exportUrl);
    expect(run.attempts).toBe(3);
  });

  it('a close-delimited body cut mid-line once: caught by its last line, retried, succeeds', async () => {
    const ctx = await setup({ overrides: { batchSize: 20 } });
    await expectRecovers(ctx, ['ndjson:cut=20000,times=1'], 2);
    const quarantined = await query(ctx.warehouse, 'SELECT count(*) AS n FROM rejected_records');
    expect(quarantined).toEqual([{ n: 0 }]); // the half line was not mistaken for a bad record
  });

  it('a close-delimited body cut on every attempt: BODY_TRUNCATED naming the URL and line', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:cut=20000'], 'BODY_TRUNCATED', { retries: 1 });
    expect(run.error?.message).toMatch(new RegExp(`${ctx.exportUrl} ended in the middle of line \\d+`));
  });

  it('a chunked body cut short once: retried, succeeds', async () => {
    const ctx = await setup();
    await expectRecovers(ctx, ['ndjson:chunkedCut=20000,times=1'], 2);
  });

  it('a chunked body cut short on every attempt: fails naming the URL, nothing merged', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:chunkedCut=20000'], 'HTTP_NETWORK', { retries: 1 });
    expect(run.error?.message).toContain(ctx.exportUrl);
  });
});

describe('bad records (case 2)', () => {
  it('malformed lines are quarantined with line number and raw text byte for byte; the rest loads', async () => {
    const ctx = await setup({ overrides: { batchSize: 30 } });
    ctx.sim.setFaults(['ndjson:malformed=25']);
    const run = await ctx.sync();
    expect(run.status).toBe('succeeded');
    const injected = Math.floor(ctx.dataset.exportCount / 25);
    expect(run.counters).toMatchObject({
      recordsRead: ctx.dataset.exportCount + injected,
      recordsRejected: injected,
      recordsLoaded: ctx.dataset.exportCount,
    });
    const rejects = await query(
      ctx.warehouse,
      'SELECT line, location, raw, issues FROM rejected_records WHERE run_id = $run ORDER BY line',
      { run: run.runId },
    );
    // After every 25 records one garbage line: physical lines 26, 52, …
    expect(rejects.map((r) => r.line)).toEqual(Array.from({ length: injected }, (_, i) => 26 * (i + 1)));
    expect(rejects.map((r) => r.raw)).toEqual(Array.from({ length: injected }, (_, i) => garbageLine(i)));
    for (const r of rejects) expect(String(r.issues)).toContain('malformed JSON');
    await expectWarehouseHolds(ctx.warehouse, expectedReports(ctx.dataset));
  });

  it('too many malformed lines: REJECT_RATIO, nothing merged, the rejects kept as evidence', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:malformed=3'], 'REJECT_RATIO');
    expect(run.counters.recordsRejected).toBeGreaterThan(0);
    const [kept] = await query(
      ctx.warehouse,
      'SELECT count(*) AS n FROM rejected_records WHERE run_id = $run',
      { run: run.runId },
    );
    expect(kept?.n).toBe(run.counters.recordsRejected);
  });

  it('warts of the fixture (CRLF, umlauts, bad values) are quarantined, the rest kept byte for byte', async () => {
    const ctx = await setup({ fixture: 'small.ndjson', overrides: { maxRejectRatio: 0.5 } });
    const run = await ctx.sync();
    expect(run.status).toBe('succeeded');
    expect(run.counters.recordsRejected).toBeGreaterThan(0);
    await expectWarehouseHolds(ctx.warehouse, expectedReports(ctx.dataset));
  });

  it('a multi-MB line over the cap is quarantined (cut raw, full size recorded), not loaded', async () => {
    const ctx = await setup({ overrides: { maxRecordBytes: 1024 * 1024, rejectRawMaxBytes: 4096 } });
    ctx.sim.setFaults(['ndjson:giant=3000000,at=7']);
    const run = await ctx.sync();
    expect(run.status).toBe('succeeded');
    expect(run.counters).toMatchObject({
      recordsRead: ctx.dataset.exportCount,
      recordsRejected: 1,
      recordsLoaded: ctx.dataset.exportCount - 1,
    });
    const [reject] = await query(
      ctx.warehouse,
      'SELECT line, raw_truncated, raw_bytes, octet_length(raw::BLOB) AS kept, issues FROM rejected_records',
    );
    expect(reject).toMatchObject({ line: 8, raw_truncated: true, kept: 4096 });
    expect(Number(reject?.raw_bytes)).toBeGreaterThan(3_000_000);
    expect(String(reject?.issues)).toContain('exceeds the 1048576-byte limit');
    const giantId = expectedReports(ctx.dataset).length; // every other report loads
    const [{ n } = {}] = await query(ctx.warehouse, 'SELECT count(*) AS n FROM reports');
    expect(n).toBe(giantId - 1);
  });

  it('a long field within the schema bound loads byte for byte; a multi-MB one is rejected by path', async () => {
    // The line cap (8 MiB default) lets both lines through; the schema bounds text at 1,000,000 characters.
    const ctx = await setup();
    ctx.sim.setFaults(['ndjson:giant=999999,at=3', 'ndjson:giant=2000000,at=9']);
    const run = await ctx.sync();
    expect(run.status).toBe('succeeded');
    expect(run.counters).toMatchObject({ recordsRejected: 1, recordsLoaded: ctx.dataset.exportCount - 1 });
    const entry = [...ctx.dataset.exportEntries(3, 1)][0];
    const [row] = await query(ctx.warehouse, 'SELECT description FROM reports WHERE id = $id', {
      id: entry?.kind === 'report' ? entry.report.id : '',
    });
    expect(String(row?.description)).toBe(filler(999_999));
    const [reject] = await query(ctx.warehouse, 'SELECT line, issues, raw_truncated FROM rejected_records');
    expect(reject).toMatchObject({ line: 10, raw_truncated: true });
    expect(JSON.parse(String(reject?.issues))).toEqual([
      expect.objectContaining({ path: 'description', message: expect.stringContaining('1000000') }),
    ]);
  });
});

/** The text of the simulator's `giant` fault: {@link record-faults.ts} `filler`. */
function filler(bytes: number): string {
  const unit = 'Very long description that never ends. ';
  return unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
}

describe('duplicates within one export (case 2; DESIGN.md §6)', () => {
  it('latest updatedAt wins, ties go to the last seen, also across batches; losers leave no version', async () => {
    const ctx = await setup({ overrides: { batchSize: 7 } });
    ctx.sim.setFaults(['ndjson:duplicates=3']);
    const run = await ctx.sync();
    expect(run.status).toBe('succeeded');
    const dupes = Math.floor(ctx.dataset.exportCount / 3);
    expect(run.counters.recordsRead).toBe(ctx.dataset.exportCount + dupes);
    expect(run.counters.duplicates).toBe(dupes);
    expect(run.counters.inserted).toBe(ctx.dataset.exportCount);
    // The simulator rotates the three patterns: current then older, older then current, tie then current.
    await expectWarehouseHolds(ctx.warehouse, expectedReports(ctx.dataset));
    const [v] = await query(
      ctx.warehouse,
      'SELECT count(*) AS n, count(DISTINCT id) AS ids FROM report_versions',
    );
    expect(v).toEqual({ n: ctx.dataset.exportCount, ids: ctx.dataset.exportCount });
    const superseded = await query(
      ctx.warehouse,
      `SELECT id FROM reports WHERE description LIKE '%(superseded)'`,
    );
    expect(superseded).toEqual([]);
  });
});

describe('redirects (case 2)', () => {
  it('a redirect loop fails with REDIRECT_LIMIT naming the URL, without retrying', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:redirect=loop'], 'REDIRECT_LIMIT');
    expect(run.attempts).toBe(1);
    expect(run.error?.message).toContain(ctx.exportUrl);
    expect(run.error?.message).toContain('redirect loop');
  });

  it('a redirect to an HTML login page is refused as UNEXPECTED_CONTENT_TYPE', async () => {
    const ctx = await setup();
    const run = await expectFailsCleanly(ctx, ['ndjson:redirect=login'], 'UNEXPECTED_CONTENT_TYPE');
    expect(run.attempts).toBe(1);
    expect(run.error?.message).toContain(`${ctx.sim.url}/login?next=`);
    expect(run.error?.message).toContain('text/html');
    expect(await query(ctx.warehouse, `SELECT count(*) AS n FROM rejected_records`)).toEqual([{ n: 0 }]);
  });

  it('a redirect to another origin is followed without the API key', async () => {
    const ctx = await setup({ overrides: { apiKey: 'k-ndjson-faults-0001' } });
    const other = await startSimulator({ dataset: ctx.dataset });
    onTestFinished(() => other.close());
    const run = await expectRecovers(ctx, [`ndjson:redirect=crossOrigin,to=${other.port}`], 1);
    expect(run.exportInfo?.url).toBe(`${other.url}${EXPORT_PATH}`);
    const first = ctx.sim.requests().find((r) => r.path === EXPORT_PATH);
    expect(first?.headers['x-api-key']).toBe('k-ndjson-faults-0001');
    const hops = other.requests();
    expect(hops).toHaveLength(1);
    expect(hops[0]?.headers['x-api-key']).toBeUndefined();
  });
});

describe('an export regenerated between attempts (case 2; DESIGN.md §4)', () => {
  it('the retry restarts the new export from its start: no Range, no splice, each record once', async () => {
    const ctx = await setup({ overrides: { batchSize: 20 } });
    // Each request sees a new export (new ETag, records rotated); the first body breaks halfway.
    const run = await expectRecovers(ctx, ['ndjson:regenerate', 'ndjson:reset=40000,times=1'], 2);
    expect(run.counters.duplicates).toBe(0);
    expect(run.counters.recordsLoaded).toBe(ctx.dataset.exportCount);
    const requests = ctx.sim.requests().filter((r) => r.path === EXPORT_PATH);
    expect(requests).toHaveLength(2);
    for (const r of requests) {
      expect(r.headers.range).toBeUndefined();
      expect(r.headers['if-range']).toBeUndefined();
    }
    // The run records the validator of the export it actually loaded: the second one.
    const [row] = await query(ctx.warehouse, 'SELECT export_etag FROM sync_runs WHERE run_id = $run', {
      run: run.runId,
    });
    expect(String(row?.export_etag)).toMatch(/\.r2"$/);
  });
});

describe('an unreachable upstream (case 2)', () => {
  it('connection refused: retried, then fails with ECONNREFUSED naming the URL', async () => {
    const ctx = await setup();
    expect((await ctx.sync()).status).toBe('succeeded');
    const before = await warehouseFingerprint(ctx.warehouse);
    const url = ctx.sim.url;
    await ctx.sim.close(); // nothing listens on that port any more
    const config = testConfig(url, ctx.warehouse.path, { retries: 2 });
    const run = await syncOnce(ctx.warehouse, config, ndjsonSource);
    expect(run.status).toBe('failed');
    expect(run.attempts).toBe(3);
    expect(run.error?.code).toBe('HTTP_NETWORK');
    expect(run.error?.message).toContain(`ECONNREFUSED while reading ${url}${EXPORT_PATH}`);
    await expectRunAccounted(ctx.warehouse, run.runId);
    expect(await warehouseFingerprint(ctx.warehouse)).toEqual(before);
  });
});
