import { connect } from 'node:net';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildReader } from '../../src/reader/server.js';
import { silentLogger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { openTestWarehouse, tempDir, testConfig } from '../helpers/sync.js';

// Requests node's HTTP parser refuses never reach a route; they still get the API's error body.

/** Sends `request` as raw bytes and resolves with the whole answer once the server closes. */
function rawExchange(url: URL, request: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(request));
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}

describe('requests the HTTP parser refuses', () => {
  let tmp: ReturnType<typeof tempDir>;
  let warehouse: Warehouse;
  let app: FastifyInstance;
  let url: URL;

  beforeEach(async () => {
    tmp = tempDir();
    const config = testConfig('http://127.0.0.1:9', join(tmp.dir, 'w.duckdb'));
    warehouse = await openTestWarehouse(config);
    app = await buildReader({ warehouse, config, logger: silentLogger() });
    url = new URL(await app.listen({ port: 0, host: '127.0.0.1' }));
  });
  afterEach(async () => {
    await app.close();
    warehouse.close();
    tmp.cleanup();
  });

  it.each([
    ['an unknown method', 'FOO /api/v1/public/reports HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'BAD_REQUEST'],
    [
      'a header line without a colon',
      'GET /api/v1/public/reports HTTP/1.1\r\nHost x\r\n\r\n',
      400,
      'BAD_REQUEST',
    ],
    [
      'a URL over 16 KiB',
      `GET /api/v1/public/reports?status=${'A'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      431,
      'HEADERS_TOO_LARGE',
    ],
  ])('%s: the API error body as JSON, then the connection closes', async (_, request, status, code) => {
    const answer = await rawExchange(url, request);
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe(
      `HTTP/1.1 ${status} ${status === 400 ? 'Bad Request' : 'Request Header Fields Too Large'}`,
    );
    expect(head).toMatch(/^content-type: application\/json; charset=utf-8$/im);
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    const parsed = JSON.parse(body) as { error: { code: string; message: string } };
    expect(Object.keys(parsed)).toEqual(['error']);
    expect(parsed.error.code).toBe(code);
    expect(parsed.error.message.length).toBeGreaterThan(10);
  });

  it('a HEAD request the parser refuses (a raw non-ASCII byte in the URL): the status, no body', async () => {
    const request = Buffer.concat([
      Buffer.from('HEAD /api/v1/public/reports?destination='),
      Buffer.from('é', 'utf8'),
      Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n'),
    ]);
    const answer = await rawExchange(url, request);
    const [head = '', body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    // RFC 9110 §9.3.2: an answer to HEAD has no content, whatever its Content-Length says.
    expect(body).toBe('');
  });
});
