import type { DuckDBConnection } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sortPendingRows } from '../../src/warehouse/recluster.js';
import { refreshRecentRows } from '../../src/warehouse/serving-recent.js';
import { MAX_SORTED_RUNS, oldestMerged } from '../../src/warehouse/sorted-runs.js';
import { byTimeThenId, storedContent, withSyncedWarehouse } from '../helpers/stored-order.js';
import { syncTargetOnce, tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** The sizes after a move that merges from `k`: the kept runs, then the merged one. */
function afterMove(sizes: number[], newRows: number, k: number): number[] {
  const merged = sizes.slice(k).reduce((a, b) => a + b, newRows);
  return [...sizes.slice(0, k), merged];
}

describe('which sorted runs a move merges', () => {
  it('merges back while the run before holds no more rows than the merge, and keeps at most the cap', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1e7 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 1e7 }),
        (sizes, newRows) => {
          const k = oldestMerged(sizes, newRows);
          expect(k).toBeGreaterThanOrEqual(0);
          expect(k).toBeLessThanOrEqual(Math.min(sizes.length, MAX_SORTED_RUNS));
          if (k > 0) {
            // It stopped at a run larger than everything merged (or only because of the cap, never past it).
            const merged = sizes.slice(k).reduce((a, b) => a + b, newRows);
            expect(sizes[k - 1]! > merged || k === MAX_SORTED_RUNS).toBe(true);
            if (sizes[k - 1]! <= merged) expect(k).toBe(MAX_SORTED_RUNS);
          }
        },
      ),
    );
  });

  it('keeps the runs few and each row rewritten a few times over many moves of any size', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000, max: 1e7 }),
        fc.array(fc.integer({ min: 1, max: 2e6 }), { minLength: 1, maxLength: 80 }),
        (base, moves) => {
          let sizes = [base];
          let rewritten = 0;
          for (const newRows of moves) {
            const k = oldestMerged(sizes, newRows);
            sizes = afterMove(sizes, newRows, k);
            rewritten += sizes.at(-1)!;
            expect(sizes.length - 1).toBeLessThanOrEqual(MAX_SORTED_RUNS);
          }
          // Nothing lost or counted twice.
          expect(sizes.reduce((a, b) => a + b, 0)).toBe(base + moves.reduce((a, b) => a + b, 0));
          expect(rewritten).toBeGreaterThanOrEqual(moves.reduce((a, b) => a + b, 0));
        },
      ),
    );
  });

  it('merges as a binary counter when every move is the same size', () => {
    let sizes = [64];
    const runs: number[] = [];
    for (let move = 0; move < 12; move++) {
      sizes = afterMove(sizes, 1, oldestMerged(sizes, 1));
      runs.push(sizes.length - 1);
    }
    // Runs after each move (the base, 64 rows, is larger than all of them here).
    expect(runs).toEqual([1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2]);
    expect(sizes).toEqual([64, 8, 4]);
  });
});

/** Each stored row's run (0: the base; -1: changed after the split), in stored (rowid) order, and its key. */
async function storedRuns(c: DuckDBConnection): Promise<{ run: number; key: string }[]> {
  const rows = await c.runAndReadAll(
    `SELECT CASE WHEN r.last_changed_at > (SELECT split_at FROM reader_serving) THEN -1
       ELSE (SELECT count(*) FROM reader_sorted_runs s WHERE s.starts_after < r.last_changed_at) END::INT,
       epoch_us(created_at)::VARCHAR || ' ' || id
     FROM report_rows r ORDER BY rowid`,
  );
  return rows.getRows().map((row) => ({ run: Number(row[0]), key: String(row[1]) }));
}

describe('sorted runs in the warehouse', () => {
  it('keeps each run together and sorted, merges them, and sorts the whole table when they reach the base', async () => {
    await withSyncedWarehouse(tmp.dir, { n: 2000, seed: 3 }, async ({ sim, config, warehouse, c }) => {
      const counts: number[] = [];
      let whole = false;
      for (let night = 0; night < 10; night++) {
        sim.advanceDays(30);
        const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
        expect(run?.status).toBe('succeeded');
        const before = await storedContent(c);
        await c.run('BEGIN TRANSACTION');
        await refreshRecentRows(c, { maxRows: 0 });
        await c.run('COMMIT');
        await sortPendingRows(c, { minRows: 0, sliceRows: 97 });
        expect(await storedContent(c), `night ${night}`).toEqual(before);
        const stored = await storedRuns(c);
        const runs = Number(
          (await c.runAndReadAll('SELECT count(*) FROM reader_sorted_runs')).getRows()[0]?.[0],
        );
        counts.push(runs);
        expect(runs).toBeLessThanOrEqual(MAX_SORTED_RUNS);
        // The split moved to the newest change: no row is left after it.
        expect(stored.some((r) => r.run === -1)).toBe(false);
        // Every run lies together, sorted by createdAt then id.
        const order = stored.map((r) => r.run).filter((run, i, all) => i === 0 || all[i - 1] !== run);
        expect(new Set(order).size, `night ${night}: runs ${order.join(',')}`).toBe(order.length);
        for (let k = 1; k <= runs; k++) {
          const keys = stored.filter((r) => r.run === k).map((r) => r.key);
          expect(keys.length).toBeGreaterThan(0);
          expect(keys, `night ${night}, run ${k}`).toEqual([...keys].sort(byTimeThenId));
        }
        if (runs === 0) {
          whole = true;
          const keys = stored.map((r) => r.key);
          expect(keys).toEqual([...keys].sort(byTimeThenId));
        }
      }
      // Runs were merged (never one more per move) and the whole table was sorted again at least once.
      expect(counts.some((n, i) => i > 0 && n <= counts[i - 1]!)).toBe(true);
      expect(whole, `runs after each move: ${counts.join(',')}`).toBe(true);
    });
  });
});
