import type { DuckDBConnection } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PageIndex } from '../../src/reader/page-index.js';
import { listPageRows } from '../../src/reader/report-pages.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { resetData, tableRows } from '../../src/warehouse/data-tables.js';
import { readServingMeta } from '../../src/warehouse/serving-index.js';
import { expectIndexExact, offsetRows, show } from '../helpers/serving.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const SERVING = ['reader_page_counts', 'reader_extra_keys', 'reader_serving'];

/** Each of these list pages is what the plain OFFSET query over `reports` gives. */
async function expectPagesExact(c: DuckDBConnection, index: PageIndex): Promise<void> {
  for (const filter of [{}, { status: 'RESOLVED' }, { destination: 'ROAD_CONTROL', status: 'SUBMITTED' }]) {
    for (const page of [1, 3, 9]) {
      const q = { index, filter, timeoutMs: 10_000, what: 'test' };
      const got = (await listPageRows(c, q, page, 25)).rows.map(show);
      expect(got, `${JSON.stringify(filter)} page ${page}`).toEqual(
        await offsetRows(c, filter, 'newest', (page - 1) * 25, 25),
      );
    }
  }
}

async function withConnection<T>(warehouse: Warehouse, fn: (c: DuckDBConnection) => Promise<T>): Promise<T> {
  const c = await warehouse.connect();
  try {
    return await fn(c);
  } finally {
    c.closeSync();
  }
}

describe('the serving index across a reset', () => {
  it('is emptied with the reports, then rebuilt by the next run or the next open, and pages stay exact', async () => {
    const sim = await startTestSimulator({ generate: { n: 600, seed: 3 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { tombstoneMinShare: 0 });
    const index = new PageIndex(); // kept across everything, as a reader keeps it
    let warehouse = await openTestWarehouse(config);
    try {
      const sync = async () => {
        const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
        expect(run?.status, run?.error?.message).toBe('succeeded');
      };
      await sync();
      const first = await withConnection(warehouse, async (c) => {
        await expectIndexExact(c);
        await expectPagesExact(c, index);
        return (await readServingMeta(c)).version;
      });

      // A reset empties the index with the reports; the next run (a full reload) builds it again.
      await withConnection(warehouse, async (c) => {
        const { emptied } = await resetData(c);
        expect(emptied.map((t) => t.table)).toEqual(expect.arrayContaining(SERVING));
        expect((await tableRows(c, SERVING)).every((t) => t.rows === 0)).toBe(true);
        expect(
          (await listPageRows(c, { index, filter: {}, timeoutMs: 10_000, what: 'test' }, 1, 25)).rows,
        ).toEqual([]);
      });
      sim.advanceDays(1);
      await sync();
      const second = await withConnection(warehouse, async (c) => {
        await expectIndexExact(c);
        await expectPagesExact(c, index);
        return (await readServingMeta(c)).version;
      });
      expect(second).toBeGreaterThan(first);

      // Reset again and reopen: the open builds the (empty) index, the run after it applies its reload.
      await withConnection(warehouse, (c) => resetData(c));
      warehouse.close();
      warehouse = await openTestWarehouse(config);
      await withConnection(warehouse, async (c) => {
        await expectIndexExact(c);
        expect((await readServingMeta(c)).version).toBeGreaterThan(second);
      });
      await sync();
      await withConnection(warehouse, async (c) => {
        await expectIndexExact(c);
        await expectPagesExact(c, index);
      });
    } finally {
      warehouse.close();
    }
  }, 120_000);
});
