import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// 64-bit keys sent as JSON numbers (legal JSON, past what a double holds) are the same reports in the
// NDJSON export as in the CSV export, and two of them a double would merge stay two.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const IDS = ['12345678901234567890', '12345678901234567891', '42'];
const T = '2024-03-01T10:00:00Z';

describe('integer ids past 2^53 − 1', () => {
  it('are their digits from either export, one report each', async () => {
    const ndjson = IDS.map(
      (id) =>
        `{"id":${id},"status":"SUBMITTED","destination":"ROAD_CONTROL","createdAt":"${T}","updatedAt":"${T}"}`,
    ).join('\n');
    const csv = `id,status,destination,createdAt,updatedAt\r\n${IDS.map((id) => `${id},SUBMITTED,ROAD_CONTROL,${T},${T}`).join('\r\n')}\r\n`;
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: IDS.length }));
      if (url.pathname.endsWith('.csv')) {
        res.writeHead(200, { 'content-type': 'text/csv' });
        return void res.end(url.searchParams.get('page') === '1' ? csv : csv.slice(0, csv.indexOf('\n') + 1));
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(`${ndjson}\n`);
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [first] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(first?.status, first?.error?.message).toBe('succeeded');
    expect(first?.counters).toMatchObject({ recordsRejected: 0, inserted: 3 });
    const [fromCsv] = await syncTargetOnce(warehouse, config, 'csv');
    expect(fromCsv?.status, fromCsv?.error?.message).toBe('succeeded');
    expect(fromCsv?.counters).toMatchObject({ inserted: 0, updated: 0, removed: 0 });
    const ids = await query(warehouse, 'SELECT id FROM reports WHERE removed_at IS NULL ORDER BY id');
    expect(ids.map((r) => r.id)).toEqual([...IDS].sort());
  });
});
