import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionPool } from '../../src/reader/connection-pool.js';
import { CurrentValidators } from '../../src/reader/current-validators.js';
import { openMigratedWarehouse } from '../../src/warehouse/open-migrated.js';
import { copyOldRows } from '../../src/warehouse/row-rewrite.js';
import { updateServingIndex } from '../../src/warehouse/serving-index.js';
import { closeCurrentVersions } from '../../src/warehouse/versions.js';
import { startSyncedReader, startTestReader, type SyncedReader } from '../helpers/reader.js';
import { query, tempDir, testConfig } from '../helpers/sync.js';

interface ErrorBody {
  error: { code: string; message: string; details?: Array<{ param: string; message: string }> };
}
interface Item {
  id: string;
  [key: string]: unknown;
}

describe('reader over a synced warehouse (fixture small.ndjson)', () => {
  let s: SyncedReader;
  beforeAll(async () => {
    // The fixture is 4 warts in 14 lines: allow that reject ratio.
    s = await startSyncedReader(
      { fixture: 'small.ndjson' },
      {
        readerListMaxPageSize: 5,
        maxRejectRatio: 0.5,
        // Answers follow a new run at once (the default lets the list lag up to 1 s, see below).
        readerValidatorsTtlMs: 0,
      },
    );
  });
  afterAll(async () => {
    await s?.close();
  });

  it('reports a reachable warehouse and the last successful run on /healthz', async () => {
    const res = await fetch(`${s.reader.url}/healthz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      status: string;
      lastSuccessfulRun: { runId: string; finishedAt: string };
    };
    expect(body).toMatchObject({ status: 'ok', warehouse: 'reachable' });
    expect(body.lastSuccessfulRun.runId).toBe(s.run.runId);
    expect(Number.isNaN(Date.parse(body.lastSuccessfulRun.finishedAt))).toBe(false);
  });

  it('exposes the run log and request durations on /metrics (Prometheus text)', async () => {
    await (await fetch(s.reader.api('/reports?pageSize=5'))).arrayBuffer();
    const res = await fetch(`${s.reader.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const c = s.run.counters;
    expect(text).toMatch(/^reports_sync_last_success_timestamp_seconds\{job="sync-ndjson"\} \d+(\.\d+)?$/m);
    expect(text).toContain(
      `reports_sync_last_run_records{job="sync-ndjson",kind="rejected"} ${c.recordsRejected}`,
    );
    expect(text).toContain(`reports_sync_last_run_records{job="sync-ndjson",kind="read"} ${c.recordsRead}`);
    expect(text).toMatch(/^reports_sync_last_run_duration_seconds\{job="sync-ndjson"\} \d/m);
    expect(text).toContain('reports_sync_last_run_success{job="sync-ndjson"} 1');
    expect(text).toContain('reports_sync_runs_total{job="sync-ndjson",status="succeeded"} 1');
    expect(text).toMatch(
      /^reports_sync_build_info\{version="\d+\.\d+\.\d+[^"]*",node="[^"]+",duckdb="[^"]+"\} 1$/m,
    );
    expect(text).toContain(`reports_sync_reports{state="current"} ${c.inserted}`);
    expect(text).toContain(`reports_sync_rejected_records ${c.recordsRejected}`);
    expect(text).toMatch(
      /reports_sync_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/public\/reports",status_code="200"\} [1-9]/,
    );
  });

  it('names /metrics by the Prometheus conventions: counters end in _total, no outcome label on a gauge', async () => {
    const text = await (await fetch(`${s.reader.url}/metrics`)).text();
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    expect(types.size).toBeGreaterThan(5);
    for (const [name, type] of types) {
      if (type === 'counter') expect(name).toMatch(/_total$/);
      if (!name.startsWith('reports_sync_')) continue; // prom-client's own process metrics
      if (type !== 'counter') expect(name).not.toMatch(/_total$/);
      if (type !== 'gauge') continue;
      const labelled = [...text.matchAll(new RegExp(`^${name}\\{([^}]*)\\}`, 'gm'))].map((m) => m[1]!);
      for (const labels of labelled) expect(labels).not.toMatch(/\bstatus=/);
    }
  });

  it('applies its own lower pageSize maximum with the shared 400 body', async () => {
    expect((await fetch(s.reader.api('/reports?pageSize=5'))).status).toBe(200);
    const res = await fetch(s.reader.api('/reports?pageSize=6'));
    expect(res.status).toBe(400);
    expect((await res.json()) as ErrorBody).toEqual({
      error: {
        code: 'INVALID_QUERY',
        message:
          'Invalid query for GET /api/v1/public/reports: pageSize must be an integer from 1 to 5 (got "6").',
        details: [{ param: 'pageSize', message: 'must be an integer from 1 to 5' }],
      },
    });
  });

  it('answers SQL-injection and path-traversal attempts as plain codes that match nothing, refuses control characters, and leaves the warehouse untouched', async () => {
    const tables = `SELECT (SELECT count(*) FROM reports) AS reports, (SELECT count(*) FROM sync_runs) AS runs,
      (SELECT count(*) FROM rejected_records) AS rejects, (SELECT count(*) FROM duckdb_tables()) AS tables`;
    const [before] = await query(s.warehouse, tables);
    // The validator stores any non-blank code without control characters, so the reader must accept the
    // same set (values are bound, never spliced): these are codes no report has.
    for (const attempt of [
      "ROAD_CONTROL' OR '1'='1",
      "x'; DROP TABLE reports; --",
      'x") UNION SELECT * FROM sync_runs --',
      '../../../../etc/passwd',
      '..',
    ]) {
      for (const param of ['destination', 'status']) {
        const res = await fetch(s.reader.api(`/reports?pageSize=5&${param}=${encodeURIComponent(attempt)}`));
        expect(res.status, `${param}=${attempt}`).toBe(200);
        expect(await res.json()).toEqual([]);
      }
    }
    for (const attempt of ['ROAD_CONTROL\u0000', '\u0001', 'A\nB', ' ']) {
      for (const path of ['/reports', '/reports.geojson']) {
        for (const param of ['destination', 'status']) {
          const res = await fetch(s.reader.api(`${path}?${param}=${encodeURIComponent(attempt)}`));
          expect(res.status, `${path} ${param}=${JSON.stringify(attempt)}`).toBe(400);
          const body = (await res.json()) as ErrorBody;
          expect(body.error.details?.[0]?.param).toBe(param);
          expect(JSON.stringify(body)).not.toMatch(/removed_at|epoch_ms|ORDER BY|\n\s+at /);
        }
      }
    }
    expect((await fetch(`${s.reader.url}/api/v1/public/../../etc/passwd`)).status).toBe(404);
    expect(await query(s.warehouse, tables)).toEqual([before]);
  });

  it('excludes removed reports everywhere, and a new successful run renews ETag and cached answers', async () => {
    const etag = (await fetch(s.reader.api('/reports/stats'))).headers.get('etag');
    const listed = (await (await fetch(s.reader.api('/reports?pageSize=5'))).json()) as Item[];
    const gone = listed.slice(0, 2).map((r) => r.id);
    const c = await s.warehouse.connect();
    try {
      // What a run that infers tombstones commits: the versions closed, removed_at on the reports, the
      // reader's serving index brought along, and its succeeded run row.
      const now = new Date(Date.now() + 60_000);
      await c.run('BEGIN TRANSACTION');
      const ids = `'${gone[0]!}', '${gone[1]!}'`;
      await copyOldRows(c, ids, false);
      await closeCurrentVersions(c, ids, now.toISOString());
      await c.run(
        `UPDATE report_rows SET removed_at = $now::TIMESTAMPTZ, last_changed_at = $now::TIMESTAMPTZ,
           version_change = 'remove' WHERE id IN (${ids})`,
        { now: now.toISOString() },
      );
      await c.run('DROP TABLE merge_old');
      await updateServingIndex(c, { now, refined: false });
      await c.run(
        `INSERT INTO sync_runs (run_id, job, source, status, started_at, finished_at, removed)
         VALUES ('test-tombstones', 'sync-ndjson', 'ndjson', 'succeeded', now(), now() + INTERVAL 1 SECOND, 2)`,
      );
      await c.run('COMMIT');
    } finally {
      c.closeSync();
    }
    const [current] = await query(s.warehouse, 'SELECT count(*) AS n FROM reports WHERE removed_at IS NULL');
    const stats = await fetch(s.reader.api('/reports/stats'));
    expect(stats.headers.get('etag')).toBe('"test-tombstones"');
    expect(stats.headers.get('etag')).not.toBe(etag);
    expect(((await stats.json()) as { total: number }).total).toBe(current?.n);
    const bodies = await Promise.all(
      ['/reports?pageSize=5', '/reports.ndjson', '/reports.csv', '/reports.geojson'].map(async (p) =>
        (await fetch(s.reader.api(p))).text(),
      ),
    );
    for (const body of bodies) for (const id of gone) expect(body).not.toContain(`"${id}"`);
    const ndjson = bodies[1] as string;
    expect(ndjson.split('\n').length - 1).toBe(current?.n);
    const csvIds = (bodies[2] as string).split('\r\n').map((l) => l.split(',')[0]);
    for (const id of gone) expect(csvIds).not.toContain(id);
  });
});

describe('CurrentValidators', () => {
  it('re-reads the last successful run after its TTL only, and on every call with TTL 0', async () => {
    const tmp = tempDir();
    const config = testConfig('http://127.0.0.1:9', join(tmp.dir, 'ttl.duckdb'));
    const warehouse = await openMigratedWarehouse(config);
    const pool = new ConnectionPool(warehouse, 2);
    try {
      const cached = new CurrentValidators(pool, 60_000, 5_000);
      const fresh = new CurrentValidators(pool, 0, 5_000);
      expect((await cached.get()).etag).toBe('"empty"');
      expect((await fresh.get()).etag).toBe('"empty"');
      await query(
        warehouse,
        `INSERT INTO sync_runs (run_id, job, source, status, started_at, finished_at, inserted)
         VALUES ('run-1', 'sync-ndjson', 'ndjson', 'succeeded', now(), now(), 1)`,
      );
      expect((await fresh.get()).etag).toBe('"run-1"');
      expect((await cached.get()).etag).toBe('"empty"'); // within its TTL: the state it read
      expect((await new CurrentValidators(pool, 60_000, 5_000).get()).etag).toBe('"run-1"');
    } finally {
      pool.close();
      warehouse.close();
      tmp.cleanup();
    }
  });
});

describe('reader on an empty warehouse', () => {
  it('answers empty results, ETag "empty" and no successful run yet', async () => {
    const tmp = tempDir();
    const config = testConfig('http://127.0.0.1:9', join(tmp.dir, 'empty.duckdb'));
    const warehouse = await openMigratedWarehouse(config);
    const reader = await startTestReader(warehouse, config);
    try {
      const list = await fetch(reader.api('/reports'));
      expect(list.status).toBe(200);
      expect(list.headers.get('etag')).toBe('"empty"');
      expect(list.headers.get('last-modified')).toBeNull();
      expect(await list.json()).toEqual([]);
      expect(await (await fetch(reader.api('/reports/stats'))).json()).toEqual({
        total: 0,
        byStatus: {},
        byDestination: {},
      });
      expect(await (await fetch(reader.api('/reports.ndjson'))).text()).toBe('');
      expect(await (await fetch(reader.api('/reports.geojson'))).text()).toBe(
        '{"type":"FeatureCollection","features":[]}\n',
      );
      const csv = await fetch(reader.api('/reports.csv'));
      expect(csv.headers.get('link')).toBeNull();
      expect(await csv.text()).toBe(
        'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n',
      );
      expect(await (await fetch(`${reader.url}/healthz`)).json()).toMatchObject({ lastSuccessfulRun: null });
    } finally {
      await reader.close();
      warehouse.close();
      tmp.cleanup();
    }
  });

  it('answers 500 INTERNAL / 503 without details when the warehouse is broken, never a stack or SQL', async () => {
    const tmp = tempDir();
    const config = testConfig('http://127.0.0.1:9', join(tmp.dir, 'gone.duckdb'));
    const warehouse = await openMigratedWarehouse(config);
    const reader = await startTestReader(warehouse, config);
    try {
      // The reader keeps connections open, which keep the database alive even after the instance is closed:
      // break it instead (its tables gone, the serving index's too).
      await query(warehouse, 'DROP TABLE report_rows');
      await query(warehouse, 'DROP TABLE sync_runs');
      await query(warehouse, 'DROP TABLE reader_page_counts');
      const res = await fetch(reader.api('/reports?status=SUBMITTED'));
      expect(res.status).toBe(500);
      const body = (await res.json()) as ErrorBody;
      expect(body.error.code).toBe('INTERNAL');
      expect(body.error.message).toMatch(
        /^The reader could not answer GET \/api\/v1\/public\/reports; the server log/,
      );
      expect(JSON.stringify(body)).not.toMatch(/SELECT|duckdb|\n\s+at /i);
      const health = await fetch(`${reader.url}/healthz`);
      expect(health.status).toBe(503);
      expect(await health.json()).toMatchObject({ status: 'unavailable', warehouse: 'unreachable' });
    } finally {
      await reader.close();
      warehouse.close();
      tmp.cleanup();
    }
  });
});

describe('reader exports of a generated dataset (50,000 reports)', () => {
  let s: SyncedReader;
  beforeAll(async () => {
    s = await startSyncedReader({ generate: { n: 50_000, seed: 4 } }, { readerConnections: 1 });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('streams the NDJSON export in many chunks without holding it (constant memory)', async () => {
    const [row] = await query(s.warehouse, 'SELECT count(*) AS n FROM reports WHERE removed_at IS NULL');
    // Uncompressed, so the body on the wire is the spooled file itself.
    const res = await fetch(s.reader.api('/reports.ndjson'), { headers: { 'Accept-Encoding': 'identity' } });
    // Sent while it is spooled: no length up front the first time (chunked).
    expect(res.headers.get('content-length')).toBeNull();
    let bytes = 0;
    let lines = 0;
    let chunks = 0;
    // Live JS memory (heap + buffers after a full GC; vitest runs with --expose-gc): DuckDB's native buffer
    // pool also lives in this process's RSS and grows with the scan whatever the reader does, and garbage
    // not yet collected would make heapUsed noise.
    const gc = (globalThis as { gc?: () => void }).gc;
    const js = () => {
      gc?.();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const before = js();
    let peak = before;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      chunks++;
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) lines++;
      if (chunks % 50 === 0) peak = Math.max(peak, js());
    }
    expect(lines).toBe(row?.n);
    expect(bytes).toBeGreaterThan(20_000_000);
    // The second time the body is complete on disk and sent with its length.
    const again = await fetch(s.reader.api('/reports.ndjson'), {
      headers: { 'Accept-Encoding': 'identity' },
    });
    expect(Number(again.headers.get('content-length'))).toBe(bytes);
    expect((await again.arrayBuffer()).byteLength).toBe(bytes);
    expect(chunks).toBeGreaterThan(20);
    // A server that built the body would hold all of it (> 20 MB) at once; streaming holds a few chunks.
    expect(gc, 'vitest.config.ts passes --expose-gc').toBeTypeOf('function');
    expect(peak - before).toBeLessThan(bytes * 0.5);
  });

  it('gives its warehouse connection back when a client leaves mid-export (one connection configured)', async () => {
    for (const path of ['/reports.ndjson', '/reports.csv?pageSize=10000', '/reports.geojson']) {
      const abort = new AbortController();
      const res = await fetch(s.reader.api(path), { signal: abort.signal });
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      abort.abort();
      await reader.closed.catch(() => undefined);
      // With REPORTS_READER_CONNECTIONS=1 this waits forever if the export kept its connection.
      const list = await fetch(s.reader.api('/reports?pageSize=1'));
      expect(list.status, path).toBe(200);
      expect(((await list.json()) as Item[]).length).toBe(1);
    }
    // A client that leaves before the body starts (HEAD included) frees it too.
    expect((await fetch(s.reader.api('/reports.ndjson'), { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(s.reader.api('/reports/stats'))).status).toBe(200);
  });
});
