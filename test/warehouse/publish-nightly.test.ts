import { readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import type { SimulatorHandle } from '../../src/simulator/server.js';
import { resetData } from '../../src/warehouse/data-tables.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { publishSnapshot, publishedDirFor } from '../../src/warehouse/publish.js';
import { expectSameAsFullPublish } from '../helpers/published.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// The publish after the nightly full export: the run records that it saw every report (the `reports` view
// lifts last_seen_at and run_id to it) instead of writing each row, so the change set holds the reports it
// changed, not all of them.

const N = 300;
const DAY = 86_400_000;

/** A report line; `variant` changes its content (a new version), `broken` makes it fail validation. */
function line(i: number, variant = 0, broken = false): string {
  const created = new Date(Date.UTC(2020, 0, 1) + i * 5 * DAY).toISOString();
  return JSON.stringify({
    id: `n${i}`,
    status: broken ? 42 : ['SUBMITTED', 'IN_PROGRESS', 'RESOLVED'][(i + variant) % 3],
    destination: ['PARKS', 'ROAD_CONTROL'][i % 2],
    description: `report ${i}${variant > 0 ? `, variant ${variant}` : ''}`,
    createdAt: created,
  });
}

describe('publish after a nightly full export', () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: SimulatorHandle | undefined;
  let warehouse: Warehouse | undefined;

  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(async () => {
    warehouse?.close();
    await sim?.close();
    [warehouse, sim] = [undefined, undefined];
    tmp.cleanup();
  });

  /** Serves `lines` as the upstream and runs a full NDJSON sync of them into the test's warehouse. */
  async function nightly(lines: string[], name: string) {
    const file = join(tmp.dir, `${name}.ndjson`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    await sim?.close();
    sim = await startTestSimulator({ dataset: await loadDataset(file) });
    const config = testConfig(sim.url, join(tmp.dir, 'warehouse.duckdb'), { maxRejectRatio: 1 });
    warehouse ??= await openTestWarehouse(config);
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('succeeded');
    return run!;
  }

  it('applies only the reports the run changed, and the copy and Parquet equal a full publish', async () => {
    const all = Array.from({ length: N }, (_, i) => i);
    await nightly(
      all.map((i) => line(i)),
      'day1',
    );
    const first = await publishSnapshot(warehouse!);
    expect(first.mode).toBe('full');
    const versionsBefore = realpathSync(first.parquetPath);

    // The next night: 5 reports changed, one vanished, one now fails validation (kept, marked unseen),
    // two are new; the other 293 are as they were.
    const changed = new Set([3, 50, 120, 200, 299]);
    const vanished = 77;
    const broken = 150;
    const day2 = all
      .filter((i) => i !== vanished)
      .map((i) => (changed.has(i) ? line(i, 1) : i === broken ? line(i, 0, true) : line(i)))
      .concat([line(N), line(N + 1)]);
    const run = await nightly(day2, 'day2');
    expect(run.counters).toMatchObject({ updated: 5, inserted: 2, removed: 1 });

    const second = await publishSnapshot(warehouse!);
    expect([second.mode, second.reason, second.parquet.mode]).toEqual([
      'incremental',
      undefined,
      'incremental',
    ]);
    // The changed, the vanished, the unseen and the new ones: not the 293 the run only saw.
    expect(second.changes).toMatchObject({ runs: 1, changedReports: 5 + 1 + 1 + 2, newVersions: 5 + 1 + 2 });

    // Every current report the run saw names it in the Parquet set, as in the view (the unseen one does not).
    const [seen] = await query(
      warehouse!,
      `SELECT seen_all_at FROM sync_runs WHERE run_id = $run AND seen_all_at IS NOT NULL`,
      { run: run.runId },
    );
    expect(seen).toBeDefined();
    const lifted = await query(
      warehouse!,
      `SELECT count(*)::INTEGER AS n FROM read_parquet('${join(second.parquetPath, 'reports', '*.parquet')}')
       WHERE run_id = $run AND removed_at IS NULL`,
      { run: run.runId },
    );
    expect(lifted).toEqual([{ n: N + 2 - 1 - 1 }]);

    // The closed versions and the current versions of unchanged periods are links to the previous files.
    const linked = readdirSync(join(second.parquetPath, 'report_versions')).filter(
      (f) =>
        statSync(join(second.parquetPath, 'report_versions', f)).ino ===
        inodeOr(join(versionsBefore, 'report_versions', f)),
    );
    expect(linked.length).toBeGreaterThan(0);
    expect(second.parquet.linked).toBeGreaterThan(0);

    await expectSameAsFullPublish(warehouse!, publishedDirFor(warehouse!.path), join(tmp.dir, 'full'));
  });

  it('publishes whole after a reset emptied the data tables', async () => {
    const lines = Array.from({ length: 50 }, (_, i) => line(i));
    await nightly(lines, 'day1');
    expect((await publishSnapshot(warehouse!)).mode).toBe('full');
    const c = await warehouse!.connect();
    try {
      await resetData(c);
    } finally {
      c.closeSync();
    }
    await nightly(lines.slice(0, 40), 'day2');
    const after = await publishSnapshot(warehouse!);
    expect(after.mode).toBe('full');
    expect(after.reason).toMatch(/reset since the last publish/);
    await expectSameAsFullPublish(warehouse!, publishedDirFor(warehouse!.path), join(tmp.dir, 'full'));
  });
});

function inodeOr(path: string): number {
  try {
    return statSync(path).ino;
  } catch {
    return -1;
  }
}
