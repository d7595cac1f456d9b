import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import {
  capturingLogger,
  openTestWarehouse,
  query,
  syncTargetOnce,
  tempDir,
  testConfig,
} from '../helpers/sync.js';

// "Latest updatedAt wins" among an export's copies of one id cannot be told for a copy that did not
// validate: a run never moves a report back in time on the strength of the copy left valid.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const copy = (status: string, updatedAt: string, lat = 50) =>
  JSON.stringify({
    id: 'Q',
    status,
    destination: 'ROAD_CONTROL',
    createdAt: '2024-01-01T00:00:00Z',
    updatedAt,
    location: { lat, lng: 10 },
  });
const others = Array.from({ length: 40 }, (_, i) =>
  JSON.stringify({
    id: `O-${i}`,
    status: 'SUBMITTED',
    destination: 'ROAD_CONTROL',
    createdAt: '2024-01-01T00:00:00Z',
  }),
);

/** Syncs the export once per entry of `exports` (Q's lines beside 40 others); the last run's figures and Q's versions. */
async function warehouseAfter(...exports: string[][]) {
  let lines = exports[0]!;
  const server = await startRawServer((req, res) => {
    if ((req.url ?? '').endsWith('/stats')) {
      return void res.end(JSON.stringify({ total: others.length + Math.min(lines.length, 1) }));
    }
    res.end(`${[...others, ...lines].join('\n')}\n`);
  });
  onTestFinished(() => server.close());
  const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { maxRejectRatio: 0.1 });
  const warehouse = await openTestWarehouse(config);
  onTestFinished(() => warehouse.close());
  for (const next of exports.slice(1, -1)) {
    await syncTargetOnce(warehouse, config, 'ndjson');
    lines = next;
  }
  await syncTargetOnce(warehouse, config, 'ndjson');
  lines = exports.at(-1)!;
  const { logger, lines: logged } = await capturingLogger();
  const [run] = await syncTargetOnce(warehouse, config, 'ndjson', logger);
  expect(run?.status, run?.error?.message).toBe('succeeded');
  const versions = await query(
    warehouse,
    `SELECT change, status, strftime(updated_at, '%Y-%m') AS month, valid_to IS NULL AS open
     FROM report_versions WHERE id = 'Q' ORDER BY valid_from`,
  );
  return { run: run!, versions, logged };
}

describe('an id whose newest copy is quarantined', () => {
  it('keeps its report as stored when the valid copy is older, and says so', async () => {
    const { run, versions, logged } = await warehouseAfter(
      [copy('IN_PROGRESS', '2024-02-01T00:00:00Z')],
      [copy('RESOLVED', '2024-03-01T00:00:00Z', 95), copy('SUBMITTED', '2024-01-01T00:00:00Z')],
    );
    expect(versions).toEqual([{ change: 'insert', status: 'IN_PROGRESS', month: '2024-02', open: true }]);
    expect(run.counters).toMatchObject({ recordsRejected: 1, updated: 0, removed: 0 });
    expect(logged.some((l) => l.held === 1)).toBe(true);
  });

  it('takes a valid copy newer than the stored report', async () => {
    const { versions } = await warehouseAfter(
      [copy('IN_PROGRESS', '2024-02-01T00:00:00Z')],
      [copy('SUBMITTED', '2024-01-15T00:00:00Z', 95), copy('RESOLVED', '2024-03-01T00:00:00Z')],
    );
    expect(versions.map((v) => [v.change, v.status, v.open])).toEqual([
      ['insert', 'IN_PROGRESS', false],
      ['update', 'RESOLVED', true],
    ]);
  });

  it('revives a removed report with its valid copy', async () => {
    const { run, versions } = await warehouseAfter(
      [copy('IN_PROGRESS', '2024-02-01T00:00:00Z')],
      [],
      [copy('RESOLVED', '2024-03-01T00:00:00Z', 95), copy('SUBMITTED', '2024-01-01T00:00:00Z')],
    );
    expect(run.counters.revived).toBe(1);
    expect(versions.map((v) => [v.change, v.status, v.open])).toEqual([
      ['insert', 'IN_PROGRESS', false],
      ['remove', 'IN_PROGRESS', false],
      ['revive', 'SUBMITTED', true],
    ]);
  });
});
