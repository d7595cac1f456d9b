// `npm run bench:reader`: the reader under load (a script, not a test). Builds a warehouse of N generated
// reports by a sync from the simulator, serves it with the reader on the same DuckDB instance (as the daemon
// does), connects four slow export readers (64 KiB every 5 s), then runs for --seconds:
//   wrk -t2 -c64 --latency  on filtered list pages (status × destination × page, chosen at random),
//   wrk -t1 -c1  --latency  on /healthz (the probe an orchestrator would send),
// while a sync of a changed upstream (the simulator advanced one day) commits in the same process.
// Prints req/s, p99, the /healthz p99 and the failed answers against the goals, and writes bench/results-reader.json.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.js';
import { buildReader } from '../src/reader/server.js';
import { generateDataset } from '../src/simulator/generate.js';
import { startSimulator } from '../src/simulator/server.js';
import { syncTarget } from '../src/sync/sync-sources.js';
import { createHttpAgent } from '../src/upstream/http-agent.js';
import { silentLogger } from '../src/util/logger.js';
import { openMigratedWarehouse } from '../src/warehouse/open-migrated.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '..', '..');

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    seconds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '64' },
    'no-sync': { type: 'boolean', default: false },
    out: { type: 'string', default: join(root, 'bench', 'results-reader.json') },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout
    .write(`Usage: npm run bench:reader -- [--records N] [--seconds S] [--connections C] [--out FILE]

  --records N       reports in the warehouse (default 1000000; building it takes minutes)
  --seconds S       length of the wrk run (default 20)
  --connections C   wrk connections on the list (default 64)
  --no-sync         no sync during the run (isolates the cost of a sync committing meanwhile)
  --out FILE        JSON results (default bench/results-reader.json)

Needs wrk (apt-get install wrk). Goals on 2 cores: >= 2000 req/s, p99 <= 50 ms, /healthz p99 <= 10 ms, no 5xx.
`);
  process.exit(0);
}
const records = Number(values.records);
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const log = (msg: string) =>
  process.stderr.write(`[bench:reader ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// Filtered list pages chosen at random. No response() hook: it would make wrk parse every answer in Lua
// and measure wrk instead of the reader; wrk's own "Non-2xx or 3xx responses" counts the failures.
const LIST_SCRIPT = `
local statuses = {"SUBMITTED", "IN_PROGRESS", "RESOLVED", "REJECTED"}
local destinations = {"ROAD_CONTROL", "WASTE_MANAGEMENT", "STREET_LIGHTING", "PARKS_AND_GREENERY"}
function init(args) math.randomseed(os.time() + math.random(1000)) end
function request()
  local s = statuses[math.random(#statuses)]
  local d = destinations[math.random(#destinations)]
  local path = "/api/v1/public/reports?status=" .. s .. "&destination=" .. d .. "&pageSize=50&page=" .. math.random(5)
  return wrk.format("GET", path)
end
`;

const work = mkdtempSync(join(tmpdir(), 'reports-sync-reader-bench-'));
const dataset = generateDataset(records, 1);
mkdirSync(join(work, 'exports'));
const simulator = await startSimulator({ dataset, exportCacheDir: join(work, 'exports') });
const config = loadConfig(
  { ...process.env, REPORTS_LOG_LEVEL: 'warn' },
  { baseUrl: simulator.url, warehouse: join(work, 'warehouse.duckdb') },
);
const warehouse = await openMigratedWarehouse(config);
const dispatcher = createHttpAgent(config);
const logger = silentLogger();

try {
  const loadAverage = loadavg();
  log(`building a warehouse of ${records} reports by a sync from the simulator …`);
  let started = Date.now();
  const initial = await syncTarget({ warehouse, config, dispatcher, logger, target: 'ndjson' });
  const failed = initial.find((r) => r.status !== 'succeeded');
  if (failed) throw new Error(`the initial sync failed: ${failed.error?.message ?? failed.status}`);
  const buildMs = Date.now() - started;
  log(`built in ${(buildMs / 1000).toFixed(1)} s`);

  const app = await buildReader({ warehouse, config, logger });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });

  // Four slow export readers: each drains 64 KiB every 5 s.
  const slow = ['/reports.ndjson', '/reports.geojson', '/reports.csv?pageSize=10000', '/reports.ndjson'].map(
    (path) => slowReader(`${base}/api/v1/public${path}`),
  );
  await Promise.all(slow.map((s) => s.started));
  log('four slow export readers connected');

  // A sync that changes data commits during the run.
  simulator.advanceDays(1);
  const syncDone = (async () => {
    if (values['no-sync']) return { ms: 0, status: 'none', finishedInRun: 0 };
    await sleep(2000);
    const t = Date.now();
    const runs = await syncTarget({ warehouse, config, dispatcher, logger, target: 'ndjson' });
    return {
      ms: Date.now() - t,
      status: runs.map((r) => r.status).join(','),
      finishedInRun: Date.now() - started,
    };
  })();

  started = Date.now();
  const lua = join(work, 'list.lua');
  writeFileSync(lua, LIST_SCRIPT);
  const [list, health] = await Promise.all([
    wrk(['-t2', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', lua, `${base}/`]),
    wrk(['-t1', '-c1', `-d${seconds}s`, '--latency', `${base}/healthz`]),
  ]);
  const sync = await syncDone;
  for (const s of slow) s.close();
  const compression: Record<string, Record<string, number>> = {};
  for (const path of ['/reports.ndjson', '/reports.geojson', '/reports?pageSize=1000']) {
    compression[path] = {};
    for (const encoding of ['identity', 'gzip', 'br']) {
      compression[path][encoding] = await bodyBytes(`${base}/api/v1/public${path}`, encoding);
    }
  }
  await app.close();

  const results = {
    records,
    buildSeconds: buildMs / 1000,
    wrkSeconds: seconds,
    list: list,
    healthz: health,
    loadAverageAtStart: loadAverage,
    compressionBytes: compression,
    slowReaders: slow.map((s) => ({ bytesRead: s.bytes() })),
    syncDuringRun: {
      seconds: sync.ms / 1000,
      status: sync.status,
      finishedWithinRun: sync.finishedInRun / 1000 <= seconds,
    },
    goals: {
      requestsPerSecond: list.requestsPerSecond >= 2000,
      p99: list.p99Ms <= 50,
      healthzP99: health.p99Ms <= 10,
      noFailedAnswers: list.failed === 0 && health.failed === 0,
    },
  };
  writeFileSync(values.out, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(
    [
      `reader bench: ${records} reports, wrk ${seconds} s, ${connections} connections, 4 slow export readers, ${values['no-sync'] ? 'no sync' : 'one sync'}`,
      `  list      ${list.requestsPerSecond.toFixed(0)} req/s, p50 ${list.p50Ms} ms, p99 ${list.p99Ms} ms, not 2xx/3xx ${list.failed}, socket errors ${list.socketErrors}`,
      `  /healthz  ${health.requestsPerSecond.toFixed(0)} req/s, p50 ${health.p50Ms} ms, p99 ${health.p99Ms} ms, not 2xx/3xx ${health.failed}`,
      ...Object.entries(compression).map(
        ([path, b]) => `  ${path}: ${mb(b.identity!)} MB, gzip ${mb(b.gzip!)} MB, br ${mb(b.br!)} MB`,
      ),
      `  load average at start ${loadAverage.map((l) => l.toFixed(1)).join(' ')} (other processes share the cores)`,
      `  sync      ${sync.status} in ${(sync.ms / 1000).toFixed(1)} s (started 2 s into the run)`,
      `  goals     ${Object.entries(results.goals)
        .map(([k, ok]) => `${k} ${ok ? 'met' : 'MISSED'}`)
        .join(', ')}`,
      `results in ${values.out}`,
      '',
    ].join('\n'),
  );
} finally {
  await dispatcher.close();
  warehouse.close();
  await simulator.close();
  rmSync(work, { recursive: true, force: true });
}

/** wrk's summary: req/s, latency percentiles (ms), answers that were not 2xx/3xx, socket errors. */
interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx/3xx answers: every request of the bench is valid, so any is a failure (a 503 or a 500). */
  failed: number;
  socketErrors: number;
}

function wrk(args: string[]): Promise<WrkResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', (err) =>
      reject(new Error(`wrk could not start (apt-get install wrk): ${err.message}`)),
    );
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`wrk exited ${code}: ${out}`));
      const pct = (p: string) => ms(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? 'NaN');
      const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      resolve({
        requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
        p50Ms: pct('50'),
        p99Ms: pct('99'),
        failed: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
        socketErrors: errors ? errors.slice(1).reduce((a, n) => a + Number(n), 0) : 0,
      });
    });
  });
}

/** `1.23ms`, `850.00us`, `1.20s` → milliseconds. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

function slowReader(url: string) {
  let bytes = 0;
  let timer: NodeJS.Timeout | undefined;
  let started!: () => void;
  const startedP = new Promise<void>((r) => (started = r));
  const req = httpRequest(url, (res) => {
    let budget = 64 * 1024;
    res.on('data', (d: Buffer) => {
      bytes += d.length;
      budget -= d.length;
      if (budget <= 0) res.pause();
    });
    started();
    timer = setInterval(() => {
      budget = 64 * 1024;
      res.resume();
    }, 5000);
  });
  req.on('error', () => undefined);
  req.end();
  return {
    started: startedP,
    bytes: () => bytes,
    close: () => {
      clearInterval(timer);
      req.destroy();
    },
  };
}

/** Bytes on the wire of one answer asked with `Accept-Encoding: encoding` (not decoded). */
function bodyBytes(url: string, encoding: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { 'Accept-Encoding': encoding } }, (res) => {
      let n = 0;
      res.on('data', (d: Buffer) => (n += d.length));
      res.on('end', () => resolve(n));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(2);
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
