import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateDataset } from '../../src/simulator/generate.js';
import { startSimulator } from '../../src/simulator/server.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { runCli } from '../helpers/cli.js';
import { startRawServer } from '../helpers/raw-server.js';
import { expectRunAccounted, tableText } from '../helpers/reliability.js';
import { query, tempDir } from '../helpers/sync.js';

// Issue 6, case 6 (sync side): the API key never appears in logs (trace level), errors, sync_runs,
// rejected_records or a cross-origin redirect's request. Asserted on the built CLI's captured stdout and
// stderr, on every table of the warehouse, and on the simulators' request logs. Each test also shows the
// key was really sent to the origin, so "not found" cannot come from a key that was never used.

const KEY = 'rs-key-6f1c2e9a7b5d4c3e';
const EXPORT_PATH = '/api/v1/public/reports.ndjson';

async function warehouseText(path: string): Promise<string> {
  const w = await openWarehouse(path, { readOnly: true });
  try {
    const tables = await query(w, `SELECT table_name FROM duckdb_tables() WHERE NOT internal`);
    const texts = await Promise.all(tables.map((t) => tableText(w, String(t.table_name))));
    return texts.join('\n');
  } finally {
    w.close();
  }
}

describe('the API key stays secret (case 6)', () => {
  it('through a retry, a cross-origin redirect and quarantined records, at log level trace', async () => {
    const tmp = tempDir('reports-sync-secret-');
    const dataset = generateDataset(120, 3);
    const other = await startSimulator({ dataset, faults: ['ndjson:malformed=40'] });
    const origin = await startSimulator({
      dataset,
      faults: ['ndjson:status=503,times=1', `ndjson:redirect=crossOrigin,to=${other.port}`],
    });
    onTestFinished(async () => {
      await origin.close();
      await other.close();
      tmp.cleanup();
    });
    const path = join(tmp.dir, 'w.duckdb');
    const env = {
      REPORTS_BASE_URL: origin.url,
      REPORTS_WAREHOUSE: path,
      REPORTS_API_KEY: KEY,
      REPORTS_LOG_LEVEL: 'trace',
      REPORTS_RETRY_BASE_MS: '10',
    };
    const sync = await runCli(['sync'], env);
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stderr).toContain('retrying'); // the retry was logged, with its error
    const status = await runCli(['status'], env);
    const config = await runCli(['config'], env);
    expect(config.code).toBe(0);

    // The key went to the origin on both attempts, and never to the other origin.
    const asked = origin.requests().filter((r) => r.path === EXPORT_PATH);
    expect(asked.map((r) => r.headers['x-api-key'])).toEqual([KEY, KEY]);
    const hops = other.requests();
    expect(hops.map((r) => r.path)).toEqual([EXPORT_PATH]);
    expect(JSON.stringify(hops)).not.toContain(KEY);

    for (const out of [sync, status, config]) {
      expect(out.stdout).not.toContain(KEY);
      expect(out.stderr).not.toContain(KEY);
    }
    const w = await openWarehouse(path, { readOnly: true });
    try {
      const [run] = await query(w, `SELECT run_id, records_rejected FROM sync_runs`);
      expect(Number(run?.records_rejected)).toBe(3); // rejected_records holds rows to search
      await expectRunAccounted(w, String(run?.run_id));
    } finally {
      w.close();
    }
    expect(await warehouseText(path)).not.toContain(KEY);
  });

  it('an error page that echoes the key does not carry it into the error, the log or sync_runs', async () => {
    const tmp = tempDir('reports-sync-secret-');
    const echo = await startRawServer((req, res) => {
      res.writeHead(401, { 'content-type': 'text/plain' });
      res.end(`Unauthorized: the key ${String(req.headers['x-api-key'])} is not valid for this resource`);
    });
    onTestFinished(async () => {
      await echo.close();
      tmp.cleanup();
    });
    const path = join(tmp.dir, 'w.duckdb');
    const sync = await runCli(['sync'], {
      REPORTS_BASE_URL: echo.url,
      REPORTS_WAREHOUSE: path,
      REPORTS_API_KEY: KEY,
      REPORTS_LOG_LEVEL: 'trace',
    });
    expect(sync.code).toBe(1);
    expect(echo.requests[0]?.headers['x-api-key']).toBe(KEY);
    expect(sync.stdout).toContain('HTTP 401');
    expect(sync.stdout).toContain('[redacted]');
    expect(sync.stdout + sync.stderr).not.toContain(KEY);
    expect(await warehouseText(path)).not.toContain(KEY);
  });

  it('credentials in the base URL stay out of the output and the run log', async () => {
    const tmp = tempDir('reports-sync-secret-');
    const sim = await startSimulator({ dataset: generateDataset(20, 1) });
    onTestFinished(async () => {
      await sim.close();
      tmp.cleanup();
    });
    const path = join(tmp.dir, 'w.duckdb');
    const password = 'pw-b9e1d7c35a';
    const sync = await runCli(['sync'], {
      REPORTS_BASE_URL: sim.url.replace('http://', `http://alice:${password}@`),
      REPORTS_WAREHOUSE: path,
      REPORTS_LOG_LEVEL: 'trace',
    });
    expect(sync.code, sync.stderr).toBe(0);
    expect(sync.stdout + sync.stderr).not.toContain(password);
    const text = await warehouseText(path);
    expect(text).toContain(sim.url.replace('http://', '')); // the upstream is recorded…
    expect(text).not.toContain(password); // …without its password
  });
});

// A 200 answer that echoes the key (or the base URL's password) in its body: a non-JSON /stats body, NDJSON
// lines (malformed, invalid and valid), CSV rows (invalid and valid), a JSON /stats body. The key must reach
// no log line, no warehouse table, no error.
describe('an upstream that echoes the key in 200 bodies', () => {
  it('the key and the URL password are redacted in every log line, table and error', async () => {
    const tmp = tempDir('reports-sync-secret-');
    const password = 'pw-3c1e9b7a55';
    let statsJson = false;
    const row = (id: string, status: string, description: string) =>
      `${id},${status},ROAD_CONTROL,POTHOLE,${description},52.5,13.4,Main St 1,2024-01-01T00:00:00Z,2024-01-02T00:00:00Z\r\n`;
    const echo = await startRawServer((req, res) => {
      const key = String(req.headers['x-api-key']);
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) {
        if (statsJson) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ total: 2, note: `key ${key}`, byKey: { [key]: 2 } }));
        } else {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end(`OK your key ${key} and password ${password} are fine`);
        }
        return;
      }
      if (url.pathname.endsWith('.ndjson')) {
        const report = (id: string, description: string, extra: Record<string, unknown> = {}) =>
          JSON.stringify({
            id,
            status: 'SUBMITTED',
            destination: 'ROAD_CONTROL',
            description,
            lat: 52.5,
            lng: 13.4,
            createdAt: '2024-01-01T00:00:00Z',
            updatedAt: '2024-01-02T00:00:00Z',
            ...extra,
          });
        res.writeHead(200, { 'content-type': 'application/x-ndjson', etag: '"n1"' });
        res.end(
          [
            report('n-1', `echo ${key}`, { echoed: { key, url: `http://bob:${password}@x.example/` } }),
            `not json, key=${key}`,
            JSON.stringify({ id: `n-${key}`, status: key }),
            report('n-2', 'plain'),
            '',
          ].join('\n'),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/csv', etag: '"c1"' });
      res.end(
        'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n' +
          row('c-1', 'SUBMITTED', `echo ${key}`) +
          row(`c-${key}`, `BAD ${key}`, 'x') +
          row('c-2', 'SUBMITTED', 'plain'),
      );
    });
    onTestFinished(async () => {
      await echo.close();
      tmp.cleanup();
    });
    const path = join(tmp.dir, 'w.duckdb');
    const env = {
      REPORTS_BASE_URL: echo.url.replace('http://', `http://alice:${password}@`),
      REPORTS_WAREHOUSE: path,
      REPORTS_API_KEY: KEY,
      REPORTS_LOG_LEVEL: 'trace',
      REPORTS_CSV_PAGE_SIZE: '10',
      REPORTS_MAX_REJECT_RATIO: '1',
      REPORTS_RETRIES: '0',
    };
    const first = await runCli(['sync', '--source', 'all'], env);
    statsJson = true;
    const second = await runCli(['sync', '--source', 'all'], env);
    expect(echo.requests.some((r) => r.headers['x-api-key'] === KEY)).toBe(true);
    // The echo really reached the pipeline: the stats warning, the rejects and the loaded reports.
    expect(first.stderr).toContain('/stats');
    expect(first.stderr).toContain('[redacted]');
    for (const out of [first, second]) {
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout + out.stderr).not.toContain(KEY);
      expect(out.stdout + out.stderr).not.toContain(password);
    }
    const text = await warehouseText(path);
    expect(text).toContain('[redacted]');
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(password);
    const w = await openWarehouse(path, { readOnly: true });
    try {
      const rejected = await query(w, `SELECT raw FROM rejected_records ORDER BY location`);
      expect(rejected.length).toBeGreaterThanOrEqual(4); // 2 NDJSON + 1 CSV per run
      expect(rejected.some((r) => String(r.raw).includes('key=[redacted]'))).toBe(true);
      const [loaded] = await query(w, `SELECT description FROM reports WHERE id = 'n-1'`);
      expect(loaded?.description).toBe('echo [redacted]');
    } finally {
      w.close();
    }
  });

  it('errors built with an echoed key or URL credentials carry neither', async () => {
    const { SyncError } = await import('../../src/util/errors.js');
    const { loadConfig } = await import('../../src/config/config.js');
    loadConfig({}, { apiKey: KEY, baseUrl: 'http://carol:pw-77aa99bb@127.0.0.1:1' });
    const err = new SyncError(
      'RUN_FAILED',
      `upstream said ${KEY} at http://carol:pw-77aa99bb@127.0.0.1:1/x`,
      {
        context: { excerpt: `key ${KEY}`, nested: [{ url: 'https://dave:other@h.example/' }] },
      },
    );
    const text = `${err.message} ${JSON.stringify(err.toJSON())}`;
    expect(text).not.toContain(KEY);
    expect(text).not.toContain('pw-77aa99bb');
    expect(text).not.toContain('dave:other');
    expect(err.message).toContain('http://[redacted]@127.0.0.1:1/x');
  });
});
