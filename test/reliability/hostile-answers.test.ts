import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// Legal answers that once cost memory or gave a misleading error: an error body without end.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('reports-sync-hostile-');
});
afterEach(() => tmp.cleanup());

const MiB = 1024 * 1024;

describe('error bodies', () => {
  it('a 503 with an endless body fails with its excerpt, its connection closed after a few KiB', async () => {
    // "Endless" up to 64 MiB, so that a client reading it whole still ends; it may write as much as the
    // socket buffers hold before the client closes.
    const limit = 64 * MiB;
    const written: number[] = [];
    const server = await startRawServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'text/html' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      let sent = 0;
      const answer = written.push(0) - 1;
      const pump = () => {
        while (!res.destroyed && sent < limit) {
          const ok = res.write(sent === 0 ? Buffer.from('<h1>Down for maintenance</h1>') : chunk);
          sent += sent === 0 ? 29 : chunk.length;
          written[answer] = sent;
          if (!ok) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      pump();
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 1 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const started = Date.now();
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('HTTP_STATUS');
    expect(run?.error?.message).toMatch(/HTTP 503 from .*: <h1>Down for maintenance<\/h1>x+$/);
    expect(written).toHaveLength(2); // retried, each answer read as little
    for (const bytes of written) expect(bytes).toBeLessThan(limit / 4);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
