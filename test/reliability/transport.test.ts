import { join } from 'node:path';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { csvRow } from '../helpers/paged-csv-server.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// Transport (docs/guarantees.md, "Transport"): compressed bodies are decoded and counted twice (wire and
// decoded bytes); a body that trickles in forever hits a per-request deadline with a clear error.

const ids = Array.from({ length: 25 }, (_, i) => `t-${String(i).padStart(3, '0')}`);
const HEADER = 'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n';
const ndjsonLine = (id: string) =>
  `${JSON.stringify({
    id,
    status: 'SUBMITTED',
    destination: 'ROAD_CONTROL',
    category: 'POTHOLE',
    description: `report ${id} `.repeat(8),
    lat: 52.5,
    lng: 13.4,
    address: 'Main St 1',
    createdAt: '2024-01-01T00:00:00Z',
    updatedAt: '2024-01-02T00:00:00Z',
  })}\n`;

const ENCODERS: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => gzipSync(b),
  deflate: (b) => deflateSync(b),
  'deflate (raw)': (b) => deflateRawSync(b),
  br: (b) => brotliCompressSync(b),
  'gzip twice, in two header lines': (b) => gzipSync(gzipSync(b)),
};
/** The `Content-Encoding` sent for an encoder (an array: one header line each, RFC 9110 §5.3). */
const CODINGS: Record<string, string | string[]> = {
  deflate: 'deflate',
  'deflate (raw)': 'deflate',
  'gzip twice, in two header lines': ['gzip', 'gzip'],
};

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir('reports-sync-transport-');
});
afterEach(() => tmp.cleanup());

describe('compressed responses', () => {
  it.each(Object.keys(ENCODERS))(
    '%s: NDJSON, CSV pages and /stats decode; wire and decoded bytes both counted',
    async (name) => {
      const encode = ENCODERS[name]!;
      const coding = CODINGS[name] ?? name;
      const server = await startRawServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        let body: string;
        let type: string;
        if (url.pathname.endsWith('/stats')) {
          body = JSON.stringify({ total: ids.length });
          type = 'application/json';
        } else if (url.pathname.endsWith('.ndjson')) {
          body = ids.map(ndjsonLine).join('');
          type = 'application/x-ndjson';
        } else {
          const page = Number(url.searchParams.get('page'));
          body =
            HEADER +
            ids
              .slice((page - 1) * 10, page * 10)
              .map(csvRow)
              .join('');
          type = 'text/csv';
        }
        const wire = encode(Buffer.from(body));
        res.setHeader('content-encoding', coding);
        res.writeHead(200, {
          'content-type': type,
          etag: '"v1"',
          'content-length': wire.length,
        });
        res.end(wire);
      });
      onTestFinished(() => server.close());
      const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { csvPageSize: 10, retries: 0 });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      const runs = await syncTargetOnce(warehouse, config, 'all');
      expect(runs.map((r) => [r.status, r.error?.message])).toEqual([
        ['succeeded', undefined],
        ['succeeded', undefined],
      ]);
      expect(server.requests.every((r) => r.headers['accept-encoding'] === 'gzip, deflate, br')).toBe(true);
      const stored = await query(
        warehouse,
        `SELECT source, records_loaded, bytes_read, bytes_wire, stats_total_upstream FROM sync_runs ORDER BY started_at`,
      );
      for (const run of stored) {
        expect(run).toMatchObject({ records_loaded: 25, stats_total_upstream: 25 });
        expect(Number(run.bytes_wire)).toBeGreaterThan(0);
        expect(Number(run.bytes_wire)).toBeLessThan(Number(run.bytes_read)); // compressed on the wire
      }
      const [n] = await query(
        warehouse,
        `SELECT count(*) AS n FROM reports WHERE description LIKE 'report t-%'`,
      );
      expect(n?.n).toBe(25);
    },
  );

  // A gzip file as served: alone; labelled with the coding too (one layer, as Apache does); and coded for
  // transport on top of the file (two layers, the strict reading of both headers).
  const GZIP_FILES = {
    'no Content-Encoding': { coding: undefined, layers: 1 },
    'Content-Encoding gzip, one layer': { coding: 'gzip', layers: 1 },
    'Content-Encoding gzip, two layers': { coding: 'gzip', layers: 2 },
    'Content-Encoding x-gzip, two layers': { coding: 'x-gzip', layers: 2 },
  } as const;
  it.each(
    (['ndjson', 'csv'] as const).flatMap((target) =>
      Object.keys(GZIP_FILES).map((variant) => [target, variant as keyof typeof GZIP_FILES] as const),
    ),
  )(
    'a %s export served as a gzip file (Content-Type application/gzip, %s) is read from inside it',
    async (target, variant) => {
      const { coding, layers } = GZIP_FILES[variant];
      const server = await startRawServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: ids.length }));
        const page = Number(url.searchParams.get('page') ?? '1');
        const text =
          target === 'ndjson'
            ? ids.map(ndjsonLine).join('')
            : HEADER + (page === 1 ? ids.map(csvRow).join('') : '');
        const file = gzipSync(Buffer.from(text));
        res.writeHead(200, {
          'content-type': 'application/gzip',
          ...(coding ? { 'content-encoding': coding } : {}),
        });
        res.end(layers === 2 ? gzipSync(file) : file);
      });
      onTestFinished(() => server.close());
      const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      const [run] = await syncTargetOnce(warehouse, config, target);
      expect(run?.status, run?.error?.message).toBe('succeeded');
      expect(run?.counters).toMatchObject({ recordsRead: 25, recordsLoaded: 25, recordsRejected: 0 });
    },
  );

  it('a corrupt gzip body fails with CONTENT_ENCODING_INVALID, not BODY_TRUNCATED', async () => {
    const server = await startRawServer((_req, res) => {
      const wire = gzipSync(Buffer.from(ids.map(ndjsonLine).join('')));
      wire[20] = (wire[20]! + 1) % 256;
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' });
      res.end(wire);
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('CONTENT_ENCODING_INVALID');
  });
});

describe('answers the sync cannot read', () => {
  it.each([
    [200, 'zstd', 'CONTENT_ENCODING_UNSUPPORTED'],
    [200, 'utf-8', 'CONTENT_ENCODING_UNSUPPORTED'],
    [503, 'zstd', 'HTTP_STATUS'],
  ])(
    'HTTP %i with Content-Encoding %s: the run fails with %s, recorded, no crash',
    async (status, coding, code) => {
      const server = await startRawServer((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/x-ndjson', 'content-encoding': coding });
        res.end('xx');
      });
      onTestFinished(() => server.close());
      const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect([run?.status, run?.error?.code]).toEqual(['failed', code]);
      const stored = await query(
        warehouse,
        `SELECT status, error LIKE '%' || $code || '%' AS named FROM sync_runs`,
        {
          code,
        },
      );
      expect(stored).toEqual([{ status: 'failed', named: true }]);
    },
  );

  it('a /stats body that starts with a UTF-8 BOM is read (its total recorded)', async () => {
    const server = await startRawServer((req, res) => {
      const stats = req.url?.endsWith('/stats');
      res.writeHead(200, {
        'content-type': stats ? 'application/json; charset=utf-8' : 'application/x-ndjson',
      });
      res.end(stats ? `\ufeff${JSON.stringify({ total: ids.length })}` : ids.map(ndjsonLine).join(''));
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    await syncTargetOnce(warehouse, config, 'ndjson');
    expect(await query(warehouse, `SELECT status, stats_total_upstream FROM sync_runs`)).toEqual([
      { status: 'succeeded', stats_total_upstream: ids.length },
    ]);
  });

  it('a 203 (a body transformed by a proxy) is read like a 200', async () => {
    const server = await startRawServer((req, res) => {
      const stats = req.url?.endsWith('/stats');
      res.writeHead(203, { 'content-type': stats ? 'application/json' : 'application/x-ndjson' });
      res.end(stats ? JSON.stringify({ total: ids.length }) : ids.map(ndjsonLine).join(''));
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect([run?.status, run?.counters.recordsLoaded]).toEqual(['succeeded', ids.length]);
  });

  it('a redirect to something that is not a URL fails with REDIRECT_INVALID', async () => {
    const server = await startRawServer((_req, res) => {
      res.writeHead(302, { location: 'http://[::1' });
      res.end();
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect([run?.status, run?.error?.code]).toEqual(['failed', 'REDIRECT_INVALID']);
  });
});

/** `text` as UTF-16 big-endian after its byte order mark `FE FF`. */
const utf16be = (text: string) =>
  Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()]);

describe('bodies in other charsets', () => {
  const TEXT = 'Köln, Straße € 😀';
  const line = (id: string) => ndjsonLine(id).replace(/"address":"[^"]*"/, `"address":"${TEXT}"`);
  const row = (id: string) => csvRow(id).replace('Main St 1', `"${TEXT}"`);

  it.each([
    ['ndjson', 'utf-16'],
    ['ndjson', 'none'],
    ['csv', 'utf-16'],
    ['csv', 'utf-16le'],
    ['recent', 'utf-16'],
    ['recent', 'none'],
  ] as const)(
    'a %s body sent big-endian after its byte order mark, labelled charset=%s, is read by its mark',
    async (source, charset) => {
      const server = await startRawServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: ids.length }));
        const page = Number(url.searchParams.get('page') ?? 1);
        const slice = ids.slice((page - 1) * 10, page * 10);
        const text =
          source === 'csv'
            ? HEADER + slice.map(row).join('')
            : source === 'recent'
              ? `[${slice.map((id) => line(id).trim()).join(',')}]`
              : ids.map(line).join('');
        const type = { csv: 'text/csv', recent: 'application/json', ndjson: 'application/x-ndjson' }[source];
        res.writeHead(200, { 'content-type': charset === 'none' ? type : `${type}; charset=${charset}` });
        res.end(utf16be(text));
      });
      onTestFinished(() => server.close());
      const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { csvPageSize: 10, retries: 0 });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      const [run] = await syncTargetOnce(warehouse, config, source);
      expect([run?.status, run?.error?.message, run?.counters.recordsLoaded]).toEqual([
        'succeeded',
        undefined,
        ids.length,
      ]);
      expect(await query(warehouse, `SELECT DISTINCT address FROM reports`)).toEqual([{ address: TEXT }]);
    },
  );

  it('a /stats body in its declared ISO-8859-1 names its counters as sent', async () => {
    const server = await startRawServer((req, res) => {
      if (!req.url?.endsWith('/stats')) return void res.end(ids.map(ndjsonLine).join(''));
      res.writeHead(200, { 'content-type': 'application/json; charset=iso-8859-1' });
      res.end(Buffer.from(JSON.stringify({ total: ids.length, byCity: { Köln: ids.length } }), 'latin1'));
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    await syncTargetOnce(warehouse, config, 'ndjson');
    expect(
      await query(warehouse, `SELECT metric, value FROM stats_values WHERE source = 'upstream' ORDER BY 1`),
    ).toEqual([
      { metric: 'byCity.Köln', value: ids.length },
      { metric: 'total', value: ids.length },
    ]);
  });

  it('a /stats body with bytes that are not UTF-8 is not used: no snapshot, no tombstones, the reason noted', async () => {
    const server = await startRawServer((req, res) => {
      if (!req.url?.endsWith('/stats')) return void res.end(ids.map(ndjsonLine).join(''));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.from(JSON.stringify({ total: ids.length, byCity: { Köln: ids.length } }), 'latin1'));
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 0 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('succeeded');
    const [stored] = await query(warehouse, `SELECT stats_total_upstream, tombstones_note FROM sync_runs`);
    expect(stored?.stats_total_upstream).toBeNull();
    expect(String(stored?.tombstones_note)).toMatch(/not valid text in its charset/);
    expect(await query(warehouse, `SELECT * FROM stats_values WHERE source = 'upstream'`)).toEqual([]);
  });
});

describe('per-request deadline', () => {
  it.each([
    ['ndjson', 'exportDeadlineMs', 'REPORTS_EXPORT_DEADLINE_MS'],
    ['csv', 'pageDeadlineMs', 'REPORTS_PAGE_DEADLINE_MS'],
  ] as const)(
    'a %s body trickling a byte at a time fails with DEADLINE_EXCEEDED, not retried',
    async (source, key, setting) => {
      const server = await startRawServer((_req, res) => {
        const body = Buffer.from(
          source === 'csv' ? HEADER + ids.map(csvRow).join('') : ids.map(ndjsonLine).join(''),
        );
        res.writeHead(200, {
          'content-type': source === 'csv' ? 'text/csv' : 'application/x-ndjson',
          etag: '"v1"',
        });
        let at = 0;
        const timer = setInterval(() => {
          if (res.destroyed || at >= body.length) {
            clearInterval(timer);
            res.end();
            return;
          }
          res.write(body.subarray(at, ++at));
        }, 20);
      });
      onTestFinished(() => server.close());
      // The body timeout (silence between chunks) never fires: a byte comes every 20 ms.
      const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), {
        [key]: 400,
        csvPageSize: 1000,
        bodyTimeoutMs: 5_000,
      });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      const [run] = await syncTargetOnce(warehouse, config, source);
      expect(run?.status).toBe('failed');
      expect(run?.error?.code).toBe('DEADLINE_EXCEEDED');
      expect(run?.error?.message).toContain(`${server.url}/api/v1/public/reports.${source}`);
      expect(run?.error?.message).toContain(`400 ms (${setting})`);
      expect(server.requests).toHaveLength(1); // not retried
      const [stored] = await query(warehouse, `SELECT error FROM sync_runs`);
      expect(String(stored?.error)).toContain('DEADLINE_EXCEEDED');
    },
  );
});

describe('minimum transfer rate', () => {
  it.each(['ndjson', 'csv'] as const)(
    'a %s body trickling below REPORTS_MIN_SPEED_BYTES is cut and fetched again as a transient failure',
    async (source) => {
      let answers = 0;
      const server = await startRawServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: ids.length }));
        const body = Buffer.from(
          source === 'csv' ? HEADER + ids.map(csvRow).join('') : ids.map(ndjsonLine).join(''),
        );
        res.writeHead(200, { 'content-type': source === 'csv' ? 'text/csv' : 'application/x-ndjson' });
        // The first answer trickles (a byte every 20 ms: never silent for the body timeout); the next is whole.
        if (answers++ > 0) return void res.end(body);
        let at = 0;
        const timer = setInterval(() => {
          if (res.destroyed || at >= body.length) {
            clearInterval(timer);
            res.end();
            return;
          }
          res.write(body.subarray(at, ++at));
        }, 20);
      });
      onTestFinished(() => server.close());
      const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), {
        minSpeedBytes: 1_000,
        minSpeedWindowMs: 500,
        csvPageSize: 1000,
        bodyTimeoutMs: 5_000,
      });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      const [run] = await syncTargetOnce(warehouse, config, source);
      expect(run?.status, run?.error?.message).toBe('succeeded');
      expect(run?.counters.recordsLoaded).toBe(ids.length);
      const data = server.requests.filter((r) => !r.url.includes('/stats'));
      expect(data.length).toBe(2);

      // A body that always trickles fails with BODY_TOO_SLOW once the retries are spent, naming the settings.
      answers = -Infinity;
      const strict = { ...config, retries: 1, conditionalExports: false };
      const [slow] = await syncTargetOnce(warehouse, strict, source);
      expect(slow?.status).toBe('failed');
      expect(slow?.error?.code).toBe('BODY_TOO_SLOW');
      expect(slow?.error?.message).toContain('REPORTS_MIN_SPEED_BYTES');
    },
    30_000,
  );
});
