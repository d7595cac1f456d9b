import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// The seed does not show the NDJSON export's path. Left unset, the default path answering 404 makes a sync
// ask the other places services put such an export, and fail naming the setting when none is it.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const REPORTS = '/api/v1/public/reports';
const IDS = ['d-1', 'd-2', 'd-3'];
const NDJSON = IDS.map(
  (id) =>
    `${JSON.stringify({ id, status: 'SUBMITTED', destination: 'ROAD_CONTROL', createdAt: '2024-01-01T00:00:00Z' })}\n`,
).join('');
const LIST = JSON.stringify(JSON.parse(`[${NDJSON.trim().split('\n').join(',')}]`));

type Handler = (req: IncomingMessage, res: ServerResponse) => boolean;

/** A service whose list, `/stats` and 404s are the same; `serves` answers the export where it is. */
async function service(serves: Handler) {
  const server = await startRawServer((req, res) => {
    const url = req.url ?? '';
    if (url.endsWith('/stats')) return void res.end(JSON.stringify({ total: IDS.length }));
    if (serves(req, res)) return;
    if (url === REPORTS) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(LIST);
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":"not found"}');
  });
  onTestFinished(() => server.close());
  return server;
}

const ndjson = (res: ServerResponse, type = 'application/x-ndjson') => {
  res.writeHead(200, { 'content-type': type, etag: '"v1"' });
  res.end(NDJSON);
  return true;
};

describe('where the NDJSON export is, when REPORTS_NDJSON_PATH is unset', () => {
  it.each<[string, Handler, string]>([
    [
      'a .jsonl file (typed octet-stream)',
      (req, res) => req.url === `${REPORTS}.jsonl` && ndjson(res, 'application/octet-stream'),
      `${REPORTS}.jsonl`,
    ],
    [
      '?format=ndjson',
      (req, res) => req.url === `${REPORTS}?format=ndjson` && ndjson(res),
      `${REPORTS}?format=ndjson`,
    ],
    [
      'the list path asked for application/x-ndjson',
      (req, res) =>
        req.url === REPORTS && String(req.headers.accept).startsWith('application/x-ndjson') && ndjson(res),
      REPORTS,
    ],
  ])('finds %s, loads it, and a second run finds it again', async (_, serves, path) => {
    const server = await service(serves);
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());

    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('succeeded');
    expect(run?.counters.inserted).toBe(IDS.length);
    const rows = await query(warehouse, `SELECT id FROM reports ORDER BY id`);
    expect(rows.map((r) => r.id)).toEqual(IDS);

    // The run log does not keep where the export was found: the default path alone is asked conditionally,
    // the export read again whole, and nothing changes.
    server.requests.length = 0;
    const [again] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(again?.status).toBe('succeeded');
    expect(again?.counters.unchanged).toBe(IDS.length);
    const conditional = server.requests.filter((r) => r.headers['if-none-match'] === '"v1"');
    expect(conditional.map((r) => r.url)).toEqual([`${REPORTS}.ndjson`]);
    expect(server.requests.filter((r) => r.url === path)).toHaveLength(1);
  });

  it('a service answering JSON documents everywhere has no NDJSON export: the run fails naming the setting', async () => {
    const server = await service((req, res) => {
      if (req.url === `${REPORTS}.ndjson`) return false;
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(req.url?.startsWith(REPORTS) ? LIST : '{"error":"no route"}');
      return true;
    });
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());

    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('NDJSON_EXPORT_NOT_FOUND');
    expect(run?.error?.message).toContain('REPORTS_NDJSON_PATH');
    expect(run?.error?.message).toContain(`${REPORTS}.jsonl: 200 with application/json`);
    const [row] = await query(warehouse, `SELECT count(*)::INTEGER AS n FROM reports`);
    expect(row?.n).toBe(0);
    const [logged] = await query(
      warehouse,
      `SELECT error->>'code' AS error_code FROM sync_runs WHERE run_id = $run`,
      {
        run: run!.runId,
      },
    );
    expect(logged?.error_code).toBe('NDJSON_EXPORT_NOT_FOUND');
  });

  it('a path that is set is the only place asked', async () => {
    const server = await service((req, res) => req.url === `${REPORTS}.jsonl` && ndjson(res));
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { ndjsonPath: '/exports/all.ndjson' });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());

    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.error?.code).toBe('HTTP_STATUS');
    expect(server.requests.filter((r) => !r.url.endsWith('/stats')).map((r) => r.url)).toEqual([
      '/exports/all.ndjson',
    ]);
  });

  it('a paged export found by asking the list for NDJSON is asked so on every page', async () => {
    const lines = NDJSON.trim().split('\n');
    const server = await service((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== REPORTS || !String(req.headers.accept).startsWith('application/x-ndjson'))
        return false;
      const page = Number(url.searchParams.get('page') ?? '1');
      const headers: Record<string, string> = { 'content-type': 'application/x-ndjson' };
      if (page < lines.length) headers.link = `<${REPORTS}?page=${page + 1}>; rel="next"`;
      res.writeHead(200, headers);
      res.end(`${lines[page - 1]}\n`);
      return true;
    });
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect(run?.counters).toMatchObject({ inserted: IDS.length, recordsRejected: 0 });
    const pages = server.requests.filter((r) => r.url.startsWith(`${REPORTS}?page=`));
    expect(pages.map((r) => r.headers.accept)).toEqual(
      pages.map(() => expect.stringMatching(/^application\/x-ndjson, application\/ndjson/)),
    );
    expect(pages).toHaveLength(IDS.length - 1);
  });

  it('names the setting relative to a base URL with a path of its own', async () => {
    const server = await service((req, res) => req.url === `/city${REPORTS}.jsonl` && ndjson(res));
    const config = testConfig(`${server.url}/city`, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const { pino } = await import('pino');
    const logged: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson', logger);
    expect(run?.status, run?.error?.message).toBe('succeeded');
    const found = logged.find((l) => l.includes('NDJSON export found'));
    expect(found).toContain(`REPORTS_NDJSON_PATH=${REPORTS}.jsonl skips the search`);
    // As told: the next run asks the export there, at once.
    const set = testConfig(`${server.url}/city`, join(tmp.dir, 'w.duckdb'), {
      ndjsonPath: `${REPORTS}.jsonl`,
    });
    expect((await syncTargetOnce(warehouse, set, 'ndjson'))[0]?.status).toBe('succeeded');
  });
});
