import { connect } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildReader } from '../../src/reader/server.js';
import { silentLogger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { openTestWarehouse, tempDir, testConfig } from '../helpers/sync.js';

// Issue 6, case 6: a client that sends its request head a byte at a time must not hold a connection for ever.
describe('reader against a slow client', () => {
  let tmp: ReturnType<typeof tempDir>;
  let warehouse: Warehouse;
  let app: FastifyInstance;
  let url: URL;

  beforeEach(async () => {
    tmp = tempDir();
    const config = testConfig('http://127.0.0.1:9', join(tmp.dir, 'w.duckdb'), {
      readerHeadersTimeoutMs: 500,
      readerRequestTimeoutMs: 1000,
      readerIdleTimeoutMs: 60_000,
    });
    warehouse = await openTestWarehouse(config);
    app = await buildReader({ warehouse, config, logger: silentLogger() });
    url = new URL(await app.listen({ port: 0, host: '127.0.0.1' }));
  });
  afterEach(async () => {
    await app.close();
    warehouse.close();
    tmp.cleanup();
  });

  it('closes a connection whose request head trickles in past the headers timeout', async () => {
    const socket = connect(Number(url.port), url.hostname);
    const started = Date.now();
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    const head = 'GET /api/v1/public/reports HTTP/1.1\r\nHost: x\r\nX-Slow: ';
    let i = 0;
    // One byte every 100 ms: never idle long enough for the idle timeout, so only the head bound can end it.
    const drip = setInterval(() => {
      if (!socket.destroyed) socket.write(head[i++ % head.length]!);
    }, 100);
    const closedAfter = await new Promise<number>((resolve) =>
      socket.on('close', () => resolve(Date.now() - started)),
    );
    clearInterval(drip);
    expect(closedAfter).toBeLessThan(10_000); // bounded by the head timeout (the idle timeout is 60 s)
    // Node answers 408 Request Timeout (or just closes) — never a 200 for a half-sent request.
    expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
  });
});
