import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// The seed shows no maximum `pageSize`: a server refusing the size asked says so with a 400 or 422, and
// the run's error names the setting that asked it.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('a pageSize the server refuses', () => {
  it.each([
    ['csv', 400, 'REPORTS_CSV_PAGE_SIZE'],
    ['recent', 422, 'REPORTS_RECENT_PAGE_SIZE'],
  ] as const)('a %s run answered %s fails naming %s', async (target, status, setting) => {
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: 1 }));
      if (Number(url.searchParams.get('pageSize')) > 500) {
        res.writeHead(status, { 'content-type': 'application/json' });
        return void res.end('{"error":"pageSize must be between 1 and 500"}');
      }
      res.writeHead(200, { 'content-type': target === 'csv' ? 'text/csv' : 'application/json' });
      res.end(target === 'csv' ? 'id,status,destination,createdAt\r\n' : '[]');
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), {
      csvPageSize: 1000,
      recentPageSize: 1000,
    });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, target);
    expect(run?.status).toBe('failed');
    expect(run?.error?.message).toContain(`HTTP ${status}`);
    expect(run?.error?.message).toContain(`lower ${setting}`);
  });
});
