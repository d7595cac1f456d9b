import type { DuckDBConnection } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sortPendingRows } from '../../src/warehouse/recluster.js';
import { refreshRecentRows } from '../../src/warehouse/serving-recent.js';
import { byTimeThenId, storedContent, withSyncedWarehouse } from '../helpers/stored-order.js';
import { syncTargetOnce, tempDir } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

/** `created_at, id` of the rows changed after `since`, in stored (rowid) order. */
async function storedOrder(c: DuckDBConnection, since: string): Promise<string[]> {
  const rows = await c.runAndReadAll(
    `SELECT epoch_us(created_at)::VARCHAR || ' ' || id FROM report_rows
     WHERE last_changed_at > $since::TIMESTAMPTZ ORDER BY rowid`,
    { since },
  );
  return rows.getRows().map((row) => String(row[0]));
}

/** Leaves a sort of the rows changed after `since` to do, as a move of the split does (sorted-runs.ts). */
async function planSort(c: DuckDBConnection, since: string): Promise<void> {
  await c.run('DELETE FROM reader_sort_pending');
  await c.run(
    `INSERT INTO reader_sort_pending SELECT $since::TIMESTAMPTZ, max(last_changed_at), NULL FROM report_rows`,
    { since },
  );
}

const pendingRows = async (c: DuckDBConnection) =>
  Number((await c.runAndReadAll('SELECT count(*) FROM reader_sort_pending')).getRows()[0]?.[0]);

describe('sorting again the rows nightly runs appended', () => {
  it('stores the same rows again, sorted by createdAt then id, however many slices', async () => {
    await withSyncedWarehouse(tmp.dir, { n: 3000, seed: 5 }, async ({ sim, config, warehouse, c }) => {
      const loaded = await c.runAndReadAll('SELECT max(last_changed_at)::VARCHAR FROM report_rows');
      const since = String(loaded.getRows()[0]?.[0]);
      for (let day = 0; day < 3; day++) {
        sim.advanceDays(5);
        const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
        expect(run?.status).toBe('succeeded');
      }
      const before = await storedContent(c);
      const appended = await storedOrder(c, since);
      expect(appended.length).toBeGreaterThan(100);
      // Appended night by night: not in createdAt order before.
      expect(appended).not.toEqual([...appended].sort(byTimeThenId));
      for (const sliceRows of [7, 100, 1_000_000]) {
        await planSort(c, since);
        expect(await sortPendingRows(c, { minRows: 0, sliceRows })).toBe(appended.length);
        expect(await storedContent(c), `slices of ${sliceRows}`).toEqual(before);
        const order = await storedOrder(c, since);
        expect(order, `slices of ${sliceRows}`).toEqual([...appended].sort(byTimeThenId));
        expect(await pendingRows(c)).toBe(0);
      }
      // Below the threshold, nothing is rewritten, and nothing is left to do.
      await planSort(c, since);
      expect(await sortPendingRows(c, { minRows: appended.length + 1 })).toBe(0);
      expect(await pendingRows(c)).toBe(0);
    });
  });

  it('keeps every report through a stop between slices, and the next run finishes the sort', async () => {
    await withSyncedWarehouse(tmp.dir, { n: 3000, seed: 7 }, async ({ sim, config, warehouse, c }) => {
      sim.advanceDays(5);
      await syncTargetOnce(warehouse, config, 'ndjson');
      const before = await storedContent(c);
      const all = await storedOrder(c, '-infinity');
      expect(all).not.toEqual([...all].sort(byTimeThenId));
      await planSort(c, '-infinity');
      // A stop (the daemon's shutdown) after the first slice: the rest is left, the reports all there.
      const shutdown = new AbortController();
      const abort = async () => shutdown.abort();
      await sortPendingRows(c, { sliceRows: 500, signal: shutdown.signal, afterSlice: abort });
      expect(await storedContent(c)).toEqual(before);
      const stopped = await c.runAndReadAll('SELECT done_before IS NOT NULL FROM reader_sort_pending');
      expect(stopped.getRows()).toEqual([[true]]);
      const stop = async (slice: number) => {
        if (slice === 2) throw new Error('killed');
      };
      await expect(sortPendingRows(c, { sliceRows: 500, afterSlice: stop })).rejects.toThrow('killed');
      // Four slices committed: the same reports, part sorted, the rest still to do.
      expect(await storedContent(c)).toEqual(before);
      const done = await c.runAndReadAll('SELECT done_before IS NOT NULL FROM reader_sort_pending');
      expect(done.getRows()).toEqual([[true]]);
      // The next run sorts the rest once it commits (a sort under way is finished, however few rows remain).
      sim.advanceDays(1);
      const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(run?.status).toBe('succeeded');
      expect(await pendingRows(c)).toBe(0);
      const loaded = await c.runAndReadAll('SELECT min(last_changed_at)::VARCHAR FROM report_rows');
      const since = String(loaded.getRows()[0]?.[0]);
      // Every row the sort covered lies in createdAt order (the run's own changes came after it).
      const lastRun = await c.runAndReadAll('SELECT max(last_changed_at)::VARCHAR FROM report_rows');
      const rows = await c.runAndReadAll(
        `SELECT epoch_us(created_at)::VARCHAR || ' ' || id FROM report_rows
           WHERE last_changed_at >= $since::TIMESTAMPTZ AND last_changed_at < $last::TIMESTAMPTZ ORDER BY rowid`,
        { since, last: String(lastRun.getRows()[0]?.[0]) },
      );
      const order = rows.getRows().map((row) => String(row[0]));
      expect(order.length).toBeGreaterThan(2000);
      expect(order).toEqual([...order].sort(byTimeThenId));
    });
  });

  it('runs when the split moves: the rows it leaves behind are sorted, the recent rows start over', async () => {
    await withSyncedWarehouse(tmp.dir, { n: 3000, seed: 9 }, async ({ sim, config, warehouse, c }) => {
      const split = async () =>
        String((await c.runAndReadAll('SELECT split_at::VARCHAR FROM reader_serving')).getRows()[0]?.[0]);
      const oldSplit = await split();
      sim.advanceDays(10);
      await syncTargetOnce(warehouse, config, 'ndjson');
      const before = await storedContent(c);
      const appended = await storedOrder(c, oldSplit);
      expect(appended.length).toBeGreaterThan(100);
      await c.run('BEGIN TRANSACTION');
      await refreshRecentRows(c, { maxRows: 0 });
      await c.run('COMMIT');
      expect(await pendingRows(c)).toBe(1);
      await sortPendingRows(c, { minRows: 0, sliceRows: 50 });
      expect(await split()).not.toBe(oldSplit);
      expect(await storedContent(c)).toEqual(before);
      expect(await storedOrder(c, oldSplit)).toEqual([...appended].sort(byTimeThenId));
      const recent = await c.runAndReadAll('SELECT count(*)::INT FROM reader_page_recent');
      expect(recent.getRows()[0]?.[0]).toBe(0);
    });
  });
});
