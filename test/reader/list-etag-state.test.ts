import { describe, expect, it, onTestFinished } from 'vitest';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { startSyncedReader } from '../helpers/reader.js';
import { syncOnce } from '../helpers/sync.js';

// A list page's ETag names the data state its rows come from. The reader keeps its validators for up to
// REPORTS_READER_VALIDATORS_TTL_MS; a run committing within that time must not get a page of the new state
// labelled with the old tag (a client walking pages under one tag would see a report twice or never).
describe('list pages and the data state their tag names', { timeout: 60_000 }, () => {
  it('a page read after a commit within the validators TTL is not labelled with the tag of before', async () => {
    const r = await startSyncedReader({ generate: { n: 300, seed: 6 } }, { readerValidatorsTtlMs: 60_000 });
    onTestFinished(() => r.close());
    const page = async (n: number, size = 10) => {
      const res = await fetch(r.reader.api(`/reports?pageSize=${size}&page=${n}`));
      expect(res.status).toBe(200);
      const ids = ((await res.json()) as { id: string }[]).map((x) => x.id);
      return { etag: res.headers.get('etag'), ids };
    };
    const before = await page(1); // cached under the tag of before

    // New reports, newest first: every page moves.
    r.simulator.advanceDays(1);
    expect((await syncOnce(r.warehouse, r.config, ndjsonSource)).status).toBe('succeeded');

    const second = await page(2);
    expect(second.etag).not.toBe(before.etag);
    // Under the tag it carries, pages 1 and 2 are one state: together they are the first 20.
    const first = await page(1);
    const twenty = await page(1, 20);
    if (second.etag !== null) {
      expect(first.etag).toBe(second.etag);
      expect(twenty.etag).toBe(second.etag);
    }
    expect([...first.ids, ...second.ids]).toEqual(twenty.ids);
    expect(first.ids).not.toEqual(before.ids);
  });
});
