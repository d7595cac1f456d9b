import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunCounters } from '../../src/warehouse/run-counters.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { runRow, warehouseFingerprint } from '../helpers/reliability.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// A run whose merge transaction rolls back (a failure inside it: the `in-merge:fail` failpoint of
// src/util/failpoint.ts throws just before the commit) merged nothing, so its run log row must say so:
// the figures of the records it read and staged, none of the merge's inserted/updated/removed.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('reports-sync-rollback-');
});
afterEach(() => {
  delete process.env.REPORTS_FAILPOINT;
  tmp.cleanup();
});

const MERGE_FIGURES = ['inserted', 'updated', 'unchanged', 'refined', 'removed', 'revived', 'duplicates'];

describe('a merge that rolls back', () => {
  it('leaves the warehouse as it was and the failed run row without the merge figures', async () => {
    const sim = await startTestSimulator({ generate: { n: 600, seed: 7 } });
    const config = testConfig(sim.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    try {
      const [first] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(first?.status).toBe('succeeded');
      const advanced = (await (
        await fetch(`${sim.url}/__admin/advance?days=3`, { method: 'POST' })
      ).json()) as { moved: number; added: number; unpublished: number };
      expect(advanced.moved + advanced.added + advanced.unpublished).toBeGreaterThan(0);
      const before = await warehouseFingerprint(warehouse);

      process.env.REPORTS_FAILPOINT = 'in-merge:fail';
      const [failed] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(failed?.status).toBe('failed');
      expect(await warehouseFingerprint(warehouse)).toEqual(before);
      const row = await runRow(warehouse, failed!.runId);
      expect(row.status).toBe('failed');
      expect(row.records_read).toBeGreaterThan(0);
      expect(Number(row.records_loaded) + Number(row.records_rejected)).toBe(Number(row.records_read));
      for (const figure of MERGE_FIGURES) expect(Number(row[figure]), figure).toBe(0);
      expect(Number(row.quality_flags)).toBe(0);
      expect(row.merged_at).toBeNull();
      expect(row.seen_all_at).toBeNull();
      // What the summary says is what the run log says.
      for (const figure of MERGE_FIGURES) {
        expect(failed!.counters[figure as keyof RunCounters], figure).toBe(0);
      }

      // The next run finishes the job, and its row carries the merge figures.
      delete process.env.REPORTS_FAILPOINT;
      const [next] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(next?.status).toBe('succeeded');
      const done = await runRow(warehouse, next!.runId);
      expect(Number(done.inserted) + Number(done.updated) + Number(done.removed)).toBeGreaterThan(0);
      expect(done.merged_at).not.toBeNull();
      const [{ n }] = (await query(warehouse, `SELECT count(*) AS n FROM sync_runs`)) as [{ n: number }];
      expect(n).toBe(3);
    } finally {
      warehouse.close();
    }
  });
});
