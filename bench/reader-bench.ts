// `npm run bench:reader`: the reader under load (a script, not a test). Builds a warehouse of N generated
// reports by a sync from the simulator, serves it with the reader on the same DuckDB instance (as the daemon
// does), then measures in turn:
// 1. shallow pages: four slow export readers (64 KiB every 5 s) connected, then for --seconds
//      wrk -t2 -c64 --latency  on filtered list pages (status × destination × pages 1–5, at random),
//      wrk -t1 -c1  --latency  on /healthz (the probe an orchestrator would send),
//    while a sync of a changed upstream (the simulator advanced one day) commits in the same process;
// 2. deep pages: wrk -t2 -c64 on every status × destination of the data, pages 1–2000 at random (most
//    beyond what any cache holds), with the page cache as configured and with it off; then, cache off,
//    only pages within each filter's own range (every answer holds reports);
// 3. first bytes: the time to the first byte of random CSV pages over the whole export and of the full
//    NDJSON and GeoJSON exports, each the first request for its body in this data state.
// With --nights D, the warehouse first lives D simulated days, each followed by the nightly NDJSON sync, as
// a mirror does after weeks of service (the rows each night changes are appended to the table).
// Prints the figures against the goals and writes bench/results-reader.json.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
import {
  bodyBytes,
  firstByte,
  quantile,
  inRangePagesScript,
  randomPagesScript,
  SEED_PER_THREAD,
  slowReader,
  wrk,
  wrkWithCpu,
  type WrkResult,
} from './reader-bench-tools.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '..', '..');

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    seconds: { type: 'string', default: '20' },
    connections: { type: 'string', default: '64' },
    'no-sync': { type: 'boolean', default: false },
    'max-page': { type: 'string', default: '2000' },
    nights: { type: 'string', default: '0' },
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
  --max-page P      deep pages are asked from 1 to P (default 2000)
  --nights D        before measuring, D simulated days each followed by the nightly NDJSON sync (default 0)
  --out FILE        JSON results (default bench/results-reader.json)

Needs wrk (apt-get install wrk). Goals on 2 cores: shallow pages >= 2000 req/s, p99 <= 50 ms, /healthz
p99 <= 10 ms; deep pages >= 1000 req/s, p99 <= 100 ms; first byte of any CSV page <= 200 ms; no 5xx.
`);
  process.exit(0);
}
const records = Number(values.records);
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const nights = Number(values.nights);
if (!Number.isInteger(nights) || nights < 0) {
  process.stderr.write(`--nights must be a whole number of days >= 0 (got ${values.nights})\n`);
  process.exit(2);
}
const log = (msg: string) =>
  process.stderr.write(`[bench:reader ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// Filtered list pages chosen at random. No response() hook: it would make wrk parse every answer in Lua
// and measure wrk instead of the reader; wrk's own "Non-2xx or 3xx responses" counts the failures.
const LIST_SCRIPT = `
local statuses = {"SUBMITTED", "IN_PROGRESS", "RESOLVED", "REJECTED"}
local destinations = {"ROAD_CONTROL", "WASTE_MANAGEMENT", "STREET_LIGHTING", "PARKS_AND_GREENERY"}
${SEED_PER_THREAD}
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
  const nightly: { day: number; seconds: number; status: string }[] = [];
  for (let day = 1; day <= nights; day++) {
    simulator.advanceDays(1);
    const t = Date.now();
    const runs = await syncTarget({ warehouse, config, dispatcher, logger, target: 'ndjson' });
    nightly.push({ day, seconds: (Date.now() - t) / 1000, status: runs.map((r) => r.status).join(',') });
    log(
      `night ${day}: nightly NDJSON sync ${nightly.at(-1)!.status} in ${nightly.at(-1)!.seconds.toFixed(1)} s`,
    );
  }

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
  // The slow readers' exports are still being written (at the warehouse's pace): measure after them.
  await exportsWritten(base);
  const deep = await deepPages(base);
  const firstBytes = await firstBytesOfExports();
  const compression: Record<string, Record<string, number>> = {};
  for (const path of ['/reports.ndjson', '/reports.geojson', '/reports?pageSize=1000']) {
    compression[path] = {};
    for (const encoding of ['identity', 'gzip', 'br']) {
      compression[path][encoding] = await bodyBytes(`${base}/api/v1/public${path}`, encoding);
    }
  }
  await app.close();

  /** Phase 2: random pages over the whole range of every filter, with the page cache as set and without. */
  async function deepPages(cachedBase: string) {
    const distinct = async (column: string) => {
      const c = await warehouse.connect();
      try {
        const sql = `SELECT DISTINCT ${column} FROM reports WHERE removed_at IS NULL ORDER BY 1`;
        return (await c.runAndReadAll(sql)).getRows().map((row) => String(row[0]));
      } finally {
        c.closeSync();
      }
    };
    const deepLua = join(work, 'deep.lua');
    const [statuses, destinations] = [await distinct('status'), await distinct('destination')];
    writeFileSync(deepLua, randomPagesScript(statuses, destinations, Number(values['max-page'])));
    const args = ['-t2', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', deepLua];
    log(
      `deep pages: ${statuses.length} statuses × ${destinations.length} destinations × pages 1–${values['max-page']}`,
    );
    const cached = await wrkWithCpu([...args, `${cachedBase}/`]);
    const uncachedApp = await buildReader({ warehouse, config: { ...config, readerCacheBytes: 0 }, logger });
    const uncachedBase = await uncachedApp.listen({ port: 0, host: '127.0.0.1' });
    const uncached = await wrkWithCpu([...args, `${uncachedBase}/`]);
    const inRangeLua = join(work, 'in-range.lua');
    writeFileSync(inRangeLua, inRangePagesScript(await filterPages(50), 50));
    log('deep pages within each filter’s range, page cache off');
    const inRange = await wrkWithCpu([
      '-t2',
      `-c${connections}`,
      `-d${seconds}s`,
      '--latency',
      '-s',
      inRangeLua,
      `${uncachedBase}/`,
    ]);
    await uncachedApp.close();
    return { statuses, destinations, cached, uncached, inRange };
  }

  /** Every status × destination with current reports, and its last page of `pageSize`. */
  async function filterPages(pageSize: number) {
    const c = await warehouse.connect();
    try {
      const sql = `SELECT status, destination, count(*)::DOUBLE FROM reports WHERE removed_at IS NULL
        GROUP BY ALL ORDER BY ALL`;
      return (await c.runAndReadAll(sql)).getRows().map((row) => ({
        status: String(row[0]),
        destination: String(row[1]),
        pages: Math.ceil(Number(row[2]) / pageSize),
      }));
    } finally {
      c.closeSync();
    }
  }

  /** Phase 3: first bytes of random CSV pages and of the full exports, each the first of its body. */
  async function firstBytesOfExports() {
    const reader = await buildReader({ warehouse, config, logger });
    const at = `${await reader.listen({ port: 0, host: '127.0.0.1' })}/api/v1/public`;
    try {
      const stats = (await (await fetch(`${at}/reports/stats`)).json()) as { total: number };
      const lastPage = Math.max(1, Math.ceil(stats.total / 1000));
      const csvPages = [];
      for (let i = 0; i < 12; i++) {
        const page = 1 + Math.floor(Math.random() * lastPage);
        csvPages.push({ page, ...(await firstByte(`${at}/reports.csv?pageSize=1000&page=${page}`)) });
      }
      const csvLast = await firstByte(
        `${at}/reports.csv?pageSize=10000&page=${Math.ceil(stats.total / 10_000)}`,
      );
      log('first bytes of the full exports (each is read to its end) …');
      const ndjson = await firstByte(`${at}/reports.ndjson`);
      const geojson = await firstByte(`${at}/reports.geojson?status=${deep.statuses[0] ?? ''}`);
      const firsts = csvPages.map((p) => p.firstByteMs);
      return {
        csvPages: { p50Ms: quantile(firsts, 0.5), maxMs: Math.max(...firsts), samples: csvPages },
        csvLastPage10000: csvLast,
        ndjson,
        geojson,
      };
    } finally {
      await reader.close();
    }
  }

  const results = {
    records,
    buildSeconds: buildMs / 1000,
    nights: nightly,
    wrkSeconds: seconds,
    list: list,
    healthz: health,
    loadAverageAtStart: loadAverage,
    compressionBytes: compression,
    slowReaders: slow.map((s) => ({ bytesRead: s.bytes() })),
    deepPages: deep,
    firstBytes,
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
      deepRequestsPerSecond: deep.cached.requestsPerSecond >= 1000,
      deepP99: deep.cached.p99Ms <= 100,
      deepNoFailedAnswers: deep.cached.failed === 0 && deep.uncached.failed === 0,
      csvFirstByte: firstBytes.csvPages.maxMs <= 200,
    },
  };
  writeFileSync(values.out, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(
    [
      `reader bench: ${records} reports${nights > 0 ? ` after ${nights} simulated nights` : ''}, wrk ${seconds} s, ${connections} connections, 4 slow export readers, ${values['no-sync'] ? 'no sync' : 'one sync'}`,
      `  list      ${list.requestsPerSecond.toFixed(0)} req/s, p50 ${list.p50Ms} ms, p99 ${list.p99Ms} ms, not 2xx/3xx ${list.failed}, socket errors ${list.socketErrors}`,
      `  /healthz  ${health.requestsPerSecond.toFixed(0)} req/s, p50 ${health.p50Ms} ms, p99 ${health.p99Ms} ms, not 2xx/3xx ${health.failed}`,
      `  deep pages (1–${values['max-page']}, ${deep.statuses.length}×${deep.destinations.length} filters, no sync):`,
      `    page cache on   ${deepLine(deep.cached)}`,
      `    page cache off  ${deepLine(deep.uncached)}`,
      `    in range, off   ${deepLine(deep.inRange)}`,
      `  first byte: CSV pages (pageSize 1000, ${firstBytes.csvPages.samples.length} at random) p50 ${firstBytes.csvPages.p50Ms} ms, max ${firstBytes.csvPages.maxMs} ms; last page of 10000 ${firstBytes.csvLastPage10000.firstByteMs} ms`,
      `  first byte: NDJSON export ${firstBytes.ndjson.firstByteMs} ms (all ${mb(firstBytes.ndjson.bytes)} MB in ${(firstBytes.ndjson.totalMs / 1000).toFixed(1)} s), GeoJSON ${firstBytes.geojson.firstByteMs} ms (all in ${(firstBytes.geojson.totalMs / 1000).toFixed(1)} s)`,
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

/** Waits until no export body is being written (`/healthz` → `exportPool.inUse` is 0). */
async function exportsWritten(base: string): Promise<void> {
  for (;;) {
    const health = (await (await fetch(`${base}/healthz`)).json()) as { exportPool?: { inUse: number } };
    if ((health.exportPool?.inUse ?? 0) === 0) return;
    await sleep(500);
  }
}

function deepLine(r: WrkResult): string {
  return `${r.requestsPerSecond.toFixed(0)} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, not 2xx/3xx ${r.failed}, socket errors ${r.socketErrors}, reader CPU ${r.cpuMsPerRequest} ms/request`;
}

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(2);
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
