import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { publishSnapshot } from '../../src/warehouse/publish.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// The cycle of `npm run bench -- --scale N` (docs/performance.md, "Scale") at 500,000 reports, with DuckDB
// held to a memory limit at which the merge that updated every row a nightly run saw ran out of memory
// (500,000 reports at 80MiB, 350,000 at 64MiB, 4M at the default 256MiB). Every step must succeed within it.
const REPORTS = 500_000;
const MEMORY_LIMIT = '80MiB';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** Published reports of the simulator: id → status. */
function upstream(sim: TestSimulator): Map<string, string> {
  return new Map([...sim.dataset.snapshot().published()].map((r) => [r.id, r.status]));
}

/** What changed upstream from `before` to `after`: new, moved (status) and gone reports. */
function changes(before: Map<string, string>, after: Map<string, string>) {
  const added = [...after.keys()].filter((id) => !before.has(id)).length;
  const moved = [...after].filter(([id, s]) => before.has(id) && before.get(id) !== s).length;
  const gone = [...before.keys()].filter((id) => !after.has(id)).length;
  return { added, moved, gone };
}

/** Rows the run `runId` wrote itself (the `reports` view shows it for every report it saw). */
async function rowsWritten(warehouse: Warehouse, runId: string): Promise<number> {
  const [row] = await query(warehouse, 'SELECT count(*) AS n FROM report_rows WHERE run_id = $run', {
    run: runId,
  });
  return Number(row?.n);
}

async function sync(warehouse: Warehouse, config: Config, target: 'ndjson' | 'csv' | 'recent') {
  const [run] = await syncTargetOnce(warehouse, config, target);
  expect(run?.status, `${target}: ${JSON.stringify(run?.error)}`).toBe('succeeded');
  return run!;
}

describe(`the nightly cycle at ${REPORTS} reports within memory_limit ${MEMORY_LIMIT}`, () => {
  it('succeeds at every step, each run writes only what changed, and the warehouse ends as the upstream', async () => {
    const sim = await startTestSimulator({ generate: { n: REPORTS, seed: 7 } });
    const path = join(tmp.dir, 'w.duckdb');
    const config = testConfig(sim.url, path, {
      duckdbMemoryLimit: MEMORY_LIMIT,
      csvPageSize: 5_000,
      conditionalExports: false,
    });
    const warehouse = await openTestWarehouse(config);
    try {
      const first = await sync(warehouse, config, 'ndjson');
      expect(first.counters.inserted).toBe(REPORTS);

      let before = upstream(sim);
      sim.advanceDays(1);
      let day = changes(before, upstream(sim));
      const nightly = await sync(warehouse, config, 'ndjson');
      expect(nightly.counters).toMatchObject({ inserted: day.added, updated: day.moved, removed: day.gone });
      // The ~97 % of reports it only saw are not written: it is recorded once, and `reports` shows it.
      expect(await rowsWritten(warehouse, nightly.runId)).toBe(day.added + day.moved + day.gone);
      const [seen] = await query(
        warehouse,
        `SELECT count(*) FILTER (WHERE run_id = $run) AS seen, count(*) AS current FROM reports WHERE removed_at IS NULL`,
        { run: nightly.runId },
      );
      expect(seen?.seen).toBe(seen?.current);

      before = upstream(sim);
      sim.advanceDays(1);
      day = changes(before, upstream(sim));
      const csv = await sync(warehouse, config, 'csv');
      expect(csv.counters).toMatchObject({ inserted: day.added, updated: day.moved, removed: day.gone });

      // Unchanged upstream, read again in full: the NDJSON lines of the CSV run's changes are new to it
      // (their typed values refine the rows), every other line is known.
      const again = await sync(warehouse, config, 'ndjson');
      expect(again.counters).toMatchObject({ inserted: 0, updated: 0, removed: 0, revived: 0 });
      expect(again.counters.refined).toBeLessThanOrEqual(day.added + day.moved);
      expect(await rowsWritten(warehouse, again.runId)).toBe(again.counters.refined);

      before = upstream(sim);
      sim.advanceDays(1);
      day = changes(before, upstream(sim));
      const recent = await sync(warehouse, config, 'recent');
      expect(recent.counters.inserted).toBe(day.added);

      // Publishing is bounded by its own work (bench/measure-publish.ts): it runs at the default limit here.
      const c = await warehouse.connect();
      await c.run(`SET memory_limit = '256MiB'`);
      const published = await publishSnapshot(warehouse).finally(() =>
        c.run(`SET memory_limit = '${MEMORY_LIMIT}'`).finally(() => c.closeSync()),
      );
      expect(published.tables.find((t) => t.name === 'report_rows')?.rows).toBeGreaterThan(REPORTS);

      // A last full run reconciles the day's moves and removals: the warehouse is the upstream.
      await sync(warehouse, config, 'ndjson');
      const rows = await query(warehouse, 'SELECT id, status FROM current_reports');
      expect(new Map(rows.map((r) => [String(r.id), String(r.status)]))).toEqual(upstream(sim));
      const [versions] = await query(
        warehouse,
        `SELECT count(*) FILTER (WHERE valid_to IS NULL) AS open, count(DISTINCT id) AS reports FROM report_versions`,
      );
      expect(versions?.open).toBe(versions?.reports);
    } finally {
      warehouse.close();
    }
    // Minutes on 2 shared cores: seven runs over 500,000 reports.
  }, 900_000);
});
