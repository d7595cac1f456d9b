import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// Legal answers that once cost memory or gave a misleading error: an error body without end, transport
// failures that did not say what to change.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('reports-sync-hostile-');
});
afterEach(() => tmp.cleanup());

const MiB = 1024 * 1024;
const ids = Array.from({ length: 5 }, (_, i) => `h-${i}`);
const NDJSON = ids
  .map((id) =>
    JSON.stringify({
      id,
      status: 'SUBMITTED',
      destination: 'ROAD_CONTROL',
      category: 'POTHOLE',
      description: `report ${id}`,
      lat: 52.5,
      lng: 13.4,
      address: 'Main St 1',
      createdAt: '2024-01-01T00:00:00Z',
      updatedAt: '2024-01-02T00:00:00Z',
    }),
  )
  .join('\n');

/** Answers /stats, and the NDJSON export through `answer` (which writes the head and calls `send`). */
function exportServer(answer: (res: ServerResponse, send: () => void) => void) {
  return startRawServer((req, res) => {
    if (req.url?.endsWith('/stats')) return void res.end(JSON.stringify({ total: ids.length }));
    answer(res, () => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(NDJSON);
    });
  });
}

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

describe('CSV pages', () => {
  it('a page decoding to over 256 MiB fails with CSV_PAGE_TOO_LARGE, naming REPORTS_CSV_PAGE_SIZE', async () => {
    // A decompression bomb: 320 gzip members of 1 MiB each (RFC 1952 §2.2), about 330 KB on the wire.
    const member = gzipSync(Buffer.alloc(MiB, 'x'));
    const wire = Buffer.concat(Array.from({ length: 320 }, () => member));
    const server = await startRawServer((req, res) => {
      if (req.url?.endsWith('/stats')) return void res.end(JSON.stringify({ total: 1 }));
      res.writeHead(200, { 'content-type': 'text/csv', 'content-encoding': 'gzip' });
      res.end(wire);
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 2 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('CSV_PAGE_TOO_LARGE');
    expect(run?.error?.message).toMatch(/Page 1 of .* is over 256 MiB.*REPORTS_CSV_PAGE_SIZE/);
    expect(server.requests.filter((r) => r.url.includes('.csv'))).toHaveLength(1); // not retried
  });
});

describe('transport failures say what to change', () => {
  it('response headers over the maximum fail at once, naming REPORTS_MAX_HEADER_BYTES, which reads them', async () => {
    const server = await exportServer((res, send) => {
      res.setHeader('x-debug', 'y'.repeat(20_000));
      send();
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 3 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('HTTP_NETWORK');
    expect(run?.error?.message).toContain('UND_ERR_HEADERS_OVERFLOW');
    expect(run?.error?.message).toContain('REPORTS_MAX_HEADER_BYTES');
    expect(server.requests.filter((r) => r.url.endsWith('.ndjson'))).toHaveLength(1); // not retried

    const [roomy] = await syncTargetOnce(warehouse, { ...config, maxHeaderBytes: 64 * 1024 }, 'ndjson');
    expect(roomy?.status, roomy?.error?.message).toBe('succeeded');
    expect(roomy?.counters.recordsLoaded).toBe(ids.length);
  });

  it('headers that do not come in time name REPORTS_HEADERS_TIMEOUT_MS', async () => {
    const server = await exportServer((res, send) => {
      setTimeout(() => res.destroyed || send(), 5_000);
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0, headersTimeoutMs: 200 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('failed');
    expect(run?.error?.message).toMatch(/UND_ERR_HEADERS_TIMEOUT .*REPORTS_HEADERS_TIMEOUT_MS/);
  });

  it('an unsolicited 100 Continue before the answer is named as a possible cause', async () => {
    const server = await exportServer((res, send) => {
      res.writeContinue();
      send();
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('failed');
    expect(run?.error?.message).toMatch(/UND_ERR_SOCKET .*unsolicited `100 Continue`/);
  });
});
