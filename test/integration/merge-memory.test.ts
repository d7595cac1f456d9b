import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// A CSV run over a warehouse the NDJSON export filled stages every report and merges them all against the
// stored rows (the heaviest merge a nightly cycle has). With the merge's slices sized from the limit at
// 6,250 reports per MiB, 300,000 reports ran out of memory at 56MiB (one slice) here, as 4M did at the
// 128MiB and 256MiB (the automatic limits of a 1 GiB and a 2 GiB container; docs/performance.md, "Scale").
const REPORTS = 300_000;
const MEMORY_LIMIT = '56MiB';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe(`a CSV run over ${REPORTS} reports the NDJSON export loaded, within memory_limit ${MEMORY_LIMIT}`, () => {
  it('merges in the slices the limit gives and learns the CSV line of every current report', async () => {
    const sim = await startTestSimulator({ generate: { n: REPORTS, seed: 11 } });
    const path = join(tmp.dir, 'w.duckdb');
    const loading = testConfig(sim.url, path);
    let warehouse = await openTestWarehouse(loading);
    try {
      const [first] = await syncTargetOnce(warehouse, loading, 'ndjson');
      expect(first?.status).toBe('succeeded');
    } finally {
      warehouse.close();
    }
    const before = new Set([...sim.dataset.snapshot().published()].map((r) => r.id));
    sim.advanceDays(1);
    const after = new Set([...sim.dataset.snapshot().published()].map((r) => r.id));

    const small = testConfig(sim.url, path, {
      duckdbMemoryLimit: MEMORY_LIMIT,
      csvPageSize: 5_000,
      conditionalExports: false,
      // As measured: a merge thread holds memory of its own, and the default takes one per core.
      duckdbMergeThreads: 2,
    });
    warehouse = await openTestWarehouse(small);
    try {
      const [csv] = await syncTargetOnce(warehouse, small, 'csv');
      expect(csv?.status, JSON.stringify(csv?.error)).toBe('succeeded');
      expect(csv?.counters.inserted).toBe([...after].filter((id) => !before.has(id)).length);
      expect(csv?.counters.removed).toBe([...before].filter((id) => !after.has(id)).length);
      // Every current report now holds the hash of its CSV row (the unchanged ones through the hashes the
      // merge stores by rowid range before its transaction), so the next CSV run parses none of them.
      const [hashes] = await query(
        warehouse,
        `SELECT count(*) AS current, count(csv_line_hash) AS hashed FROM report_rows WHERE removed_at IS NULL`,
      );
      expect(hashes?.current).toBe(after.size);
      expect(hashes?.hashed).toBe(hashes?.current);
      const [again] = await syncTargetOnce(warehouse, small, 'csv');
      expect(again?.counters).toMatchObject({ inserted: 0, updated: 0, removed: 0, recordsRejected: 0 });
      const [written] = await query(warehouse, 'SELECT count(*) AS n FROM report_rows WHERE run_id = $run', {
        run: again!.runId,
      });
      expect(written?.n).toBe(0);
    } finally {
      warehouse.close();
    }
    // Three syncs of 300,000 reports: a minute or more on 2 shared cores.
  }, 600_000);
});
