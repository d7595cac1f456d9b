import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';
import { syncTargetOnce } from '../helpers/sync.js';

/**
 * A list page is read without a transaction (report-pages.ts): its window comes from counts kept in memory
 * and its rows from one query. While a run commits, every page must be the page of the state before the
 * run or of the state after it, never counts of one and rows of the other.
 */
describe('list pages read while a run merges', () => {
  let s: SyncedReader;
  beforeAll(async () => {
    // No page cache: every request reads the warehouse. The list re-reads its validators every second, as
    // by default, so pages are computed from the new rows while it still holds counts of the old ones.
    s = await startSyncedReader({ generate: { n: 4000, seed: 5 } }, { readerCacheBytes: 0 });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  it('shows each page as before the run or as after it, never a mix', async () => {
    const paths: string[] = [];
    for (const filter of [
      '',
      'status=RESOLVED&',
      'destination=ROAD_CONTROL&',
      'status=REJECTED&destination=ROAD_CONTROL&',
    ]) {
      for (const page of [1, 2, 7, 20, 39, 80]) paths.push(`/reports?${filter}pageSize=50&page=${page}`);
    }
    const read = async (path: string) => (await fetch(s.reader.api(path))).text();
    const before = new Map(await Promise.all(paths.map(async (p) => [p, await read(p)] as const)));

    const moved = s.simulator.advanceDays(1);
    expect(moved.moved + moved.added + moved.unpublished).toBeGreaterThan(0);
    let merging = true;
    const sync = syncTargetOnce(s.warehouse, s.config, 'ndjson').finally(() => (merging = false));
    const seen: Array<[string, string]> = [];
    const readers = Array.from({ length: 4 }, async (_, k) => {
      // Until the run is done, then a little longer (the validators' TTL), cycling over the pages.
      let i = k;
      let after = 0;
      while (merging || after++ < 40) {
        const path = paths[i++ % paths.length]!;
        seen.push([path, await read(path)]);
      }
    });
    const [runs] = await Promise.all([sync, ...readers]);
    expect(runs?.[0]?.status).toBe('succeeded');
    await new Promise((r) => setTimeout(r, 1100)); // past the validators' TTL
    const after = new Map(await Promise.all(paths.map(async (p) => [p, await read(p)] as const)));

    const changedPages = paths.filter((p) => before.get(p) !== after.get(p));
    expect(changedPages.length).toBeGreaterThan(paths.length / 2);
    const mixed = seen.filter(([p, body]) => body !== before.get(p) && body !== after.get(p));
    expect(mixed.map(([p]) => p)).toEqual([]);
    // The run's commit happened while pages were being read: both states were seen.
    expect(seen.some(([p, body]) => body === after.get(p) && body !== before.get(p))).toBe(true);
  }, 120_000);
});
