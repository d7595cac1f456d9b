import { request as httpRequest, type IncomingMessage } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { startSyncedReader, startTestReader, type SyncedReader } from '../helpers/reader.js';
import { syncOnce } from '../helpers/sync.js';

/** A raw GET (no automatic decompression, any Host header): status, headers and body bytes. */
function rawGet(
  url: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A client that reads the first bytes of an export and then stops reading, keeping the socket open. */
function slowReader(url: string): Promise<{ status: number; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, (res) => {
      res.once('data', () => {
        res.pause();
        resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

interface Health {
  status: string;
  pool: { size: number; inUse: number; waiting: number; saturated: boolean };
  exportPool: { size: number; inUse: number; waiting: number; saturated: boolean };
}

describe('the reader for dashboards (20,000 generated reports)', () => {
  let s: SyncedReader;
  beforeAll(async () => {
    // Four connections for lists and four for exports: four exports at once never wait for one (how long
    // writing a body takes on a loaded machine is not what this suite measures).
    s = await startSyncedReader(
      { generate: { n: 20_000, seed: 7 } },
      { readerConnections: 4, readerExportConnections: 4 },
    );
  }, 180_000);
  afterAll(async () => {
    await s?.close();
  });

  it('keeps /healthz, stats and lists answering while four clients stall mid-export, holding no connection', async () => {
    const health = async (): Promise<Health> => {
      const res = await fetch(`${s.reader.url}/healthz`);
      expect(res.status).toBe(200);
      return (await res.json()) as Health;
    };
    const paths = ['/reports.ndjson', '/reports.geojson', '/reports.csv?pageSize=10000', '/reports.ndjson'];
    const slow = await Promise.all(paths.map((p) => slowReader(s.reader.api(p))));
    try {
      expect(slow.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      // Four stalled exports and four connections of each pool: none of them is held by a stalled client.
      // An export holds its connection while its body is written, at the warehouse's pace (the clients get
      // its first bytes meanwhile), then gives it back whether or not its client reads on. A list
      // connection is in use for a moment every 250 ms (the validators' background refresh,
      // current-validators.ts): one held by a stalled client would never free.
      let body = await health();
      const busy = (h: Health) => h.exportPool.inUse > 0 || h.pool.inUse > 0;
      for (const deadline = Date.now() + 60_000; busy(body) && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 100));
        body = await health();
      }
      expect(body.status).toBe('ok');
      expect(body.pool).toMatchObject({ size: 4, inUse: 0, waiting: 0, saturated: false });
      expect(body.exportPool).toMatchObject({ size: 4, inUse: 0, waiting: 0 });
      const stats = await fetch(s.reader.api('/reports/stats'));
      expect(stats.status).toBe(200);
      for (const page of [1, 2, 3]) {
        const list = await fetch(s.reader.api(`/reports?status=SUBMITTED&pageSize=100&page=${page}`));
        expect(list.status).toBe(200);
        expect(((await list.json()) as unknown[]).length).toBeGreaterThan(0);
      }
    } finally {
      for (const r of slow) r.close();
    }
  });

  it('answers 503 with Retry-After and the public error body when no connection frees up in time', async () => {
    const reader = await startTestReader(s.warehouse, {
      ...s.config,
      readerConnections: 1,
      readerAcquireTimeoutMs: 1,
      readerSpoolBytes: 0,
    });
    try {
      // Distinct CSV pages, all at once, on one connection: each takes far longer than 1 ms to read.
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          fetch(reader.api(`/reports.csv?pageSize=2000&page=${(i % 10) + 1}`)),
        ),
      );
      const refused = answers.filter((r) => r.status !== 200);
      expect(refused.length).toBeGreaterThan(0);
      for (const res of refused) {
        expect(res.status).toBe(503);
        expect(res.headers.get('retry-after')).toBe('1');
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('UNAVAILABLE');
      }
      for (const res of answers.filter((r) => r.status === 200)) await res.arrayBuffer();
    } finally {
      await reader.close();
    }
  });

  it('answers a CORS preflight and marks answers readable from any origin', async () => {
    const preflight = await fetch(s.reader.api('/reports?pageSize=5'), {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://dashboard.example',
        'Access-Control-Request-Method': 'GET',
        'Access-Control-Request-Headers': 'If-None-Match',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('GET');
    const list = await fetch(s.reader.api('/reports?pageSize=5'), {
      headers: { Origin: 'https://dashboard.example' },
    });
    expect(list.headers.get('access-control-allow-origin')).toBe('*');
    expect(list.headers.get('access-control-expose-headers')).toMatch(/ETag/i);
  });

  it('answers an OPTIONS that is no preflight as the API does: 405 with Allow, or 404', async () => {
    const bare = await fetch(s.reader.api('/reports'), { method: 'OPTIONS' });
    expect([bare.status, bare.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    expect(((await bare.json()) as { error: { code: string } }).error.code).toBe('METHOD_NOT_ALLOWED');
    const unknown = await fetch(s.reader.api('/nothing-here'), { method: 'OPTIONS' });
    expect(unknown.status).toBe(404);
  });

  it('allows only the configured origins when REPORTS_READER_CORS_ORIGINS lists them', async () => {
    const reader = await startTestReader(s.warehouse, {
      ...s.config,
      readerCorsOrigins: 'https://ok.example, https://also.example',
    });
    try {
      const ok = await fetch(reader.api('/reports/stats'), { headers: { Origin: 'https://also.example' } });
      expect(ok.headers.get('access-control-allow-origin')).toBe('https://also.example');
      const other = await fetch(reader.api('/reports/stats'), {
        headers: { Origin: 'https://evil.example' },
      });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await reader.close();
    }
  });

  it('compresses every body over 1 KiB with br and gzip, decoding to the same bytes as the identity answer', async () => {
    // Stats (a few hundred bytes) stay under the threshold: compressing them would cost more than it saves.
    for (const path of ['/reports?pageSize=1000', '/reports.ndjson', '/reports.geojson', '/reports.csv']) {
      const plain = await rawGet(s.reader.api(path), { 'Accept-Encoding': 'identity' });
      expect(plain.headers['content-encoding'], path).toBeUndefined();
      const gzip = await rawGet(s.reader.api(path), { 'Accept-Encoding': 'gzip' });
      expect(gzip.headers['content-encoding'], path).toBe('gzip');
      expect(gunzipSync(gzip.body).equals(plain.body), path).toBe(true);
      const br = await rawGet(s.reader.api(path), { 'Accept-Encoding': 'br, gzip' });
      expect(br.headers['content-encoding'], path).toBe('br');
      expect(brotliDecompressSync(br.body).equals(plain.body), path).toBe(true);
      expect(br.body.length, path).toBeLessThan(plain.body.length);
    }
  });

  it('sends Cache-Control on every public answer, errors not stored', async () => {
    for (const path of [
      '/reports',
      '/reports.ndjson',
      '/reports.geojson',
      '/reports.csv',
      '/reports/stats',
    ]) {
      expect((await rawGet(s.reader.api(path))).headers['cache-control'], path).toBe('no-cache');
    }
    expect((await rawGet(s.reader.api('/reports?pageSize=0'))).headers['cache-control']).toBe('no-store');
  });

  it('keeps ETag and Last-Modified across a sync that changes nothing, and honours If-Modified-Since', async () => {
    const before = await rawGet(s.reader.api('/reports/stats'));
    expect(before.headers.etag).toBe(`"${s.run.runId}"`);
    const again = await syncOnce(s.warehouse, s.config, ndjsonSource);
    expect(again.status).toBe('succeeded');
    expect(again.runId).not.toBe(s.run.runId);
    for (const path of ['/reports/stats', '/reports.ndjson', '/reports?pageSize=5']) {
      const after = await rawGet(s.reader.api(path));
      expect(after.headers.etag, path).toBe(before.headers.etag);
      expect(after.headers['last-modified'], path).toBe(before.headers['last-modified']);
      const revalidated = await rawGet(s.reader.api(path), {
        'If-Modified-Since': String(before.headers['last-modified']),
      });
      expect(revalidated.status, path).toBe(304);
      expect(revalidated.body.length).toBe(0);
      const older = new Date(Date.parse(String(before.headers['last-modified'])) - 60_000).toUTCString();
      expect((await rawGet(s.reader.api(path), { 'If-Modified-Since': older })).status, path).toBe(200);
    }
    // /healthz still names the newest successful run, once its background refresh has read it.
    let latest: string | undefined;
    for (let i = 0; i < 100 && latest !== again.runId; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      const health = (await (await fetch(`${s.reader.url}/healthz`)).json()) as {
        lastSuccessfulRun: { runId: string };
      };
      latest = health.lastSuccessfulRun.runId;
    }
    expect(latest).toBe(again.runId);
  });

  it('never copies the Host header into the CSV Link: relative by default, absolute from REPORTS_PUBLIC_URL', async () => {
    const hostile = await rawGet(s.reader.api('/reports.csv?pageSize=100'), { Host: 'evil.example' });
    expect(hostile.headers.link).toBe('</api/v1/public/reports.csv?pageSize=100&page=2>; rel="next"');
    expect(JSON.stringify(hostile.headers)).not.toContain('evil.example');

    const configured = await startTestReader(s.warehouse, {
      ...s.config,
      publicUrl: 'https://reports.example.org/mirror',
    });
    try {
      const res = await rawGet(configured.api('/reports.csv?pageSize=100'), { Host: 'evil.example' });
      expect(res.headers.link).toBe(
        '<https://reports.example.org/mirror/api/v1/public/reports.csv?pageSize=100&page=2>; rel="next"',
      );
    } finally {
      await configured.close();
    }

    const proxied = await startTestReader(s.warehouse, { ...s.config, readerTrustProxy: true });
    try {
      const res = await rawGet(proxied.api('/reports.csv?pageSize=100'), {
        Host: 'internal:8080',
        'X-Forwarded-Proto': 'https',
        'X-Forwarded-Host': 'reports.example.org',
      });
      expect(res.headers.link).toBe(
        '<https://reports.example.org/api/v1/public/reports.csv?pageSize=100&page=2>; rel="next"',
      );
    } finally {
      await proxied.close();
    }
  });
});
