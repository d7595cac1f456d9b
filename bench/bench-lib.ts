// What `npm run bench` and its scale cycle share: the simulator in a child process, a measured child process
// (wall time, peak RSS), the untimed warming of the simulator's export cache, and the run log of a warehouse.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { request } from 'undici';

const here = fileURLToPath(new URL('.', import.meta.url));
/** The repository root (bench/ is compiled to dist/bench/). */
export const ROOT = join(here, '..', '..');
/** The CLI the measured steps run. */
export const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');
/** One publish of a warehouse, in a process of its own (bench/publish-once.ts). */
export const PUBLISH = join(here, 'publish-once.js');
const PROBE = pathToFileURL(join(here, 'rss-probe.js')).href;

/** Writes a timestamped progress line on stderr. */
export const log = (msg: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
};

/** Bytes as MiB, no decimals. */
export const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(0);

/** A measured child process: wall time (ms), peak RSS (bytes, the kernel's high-water mark) and exit code. */
export interface Measured {
  wallMs: number;
  peakRssBytes: number;
  exitCode: number | null;
}

/**
 * Starts `reports-sync simulate --generate n --cache-exports` and resolves with its base URL and a stop
 * function. The generated dataset is derived per record, never held whole (src/simulator/generate.ts).
 */
export async function startSimulator(n: number): Promise<{ url: string; stop: () => void }> {
  const child = spawn(
    process.execPath,
    [CLI, 'simulate', '--generate', String(n), '--cache-exports', '--log-level', 'warn'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      const m = /listening on (\S+)/.exec(buffered);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

/**
 * Runs `node --import rss-probe args` in a child process and measures its wall time and peak RSS (the
 * child's `maxRSS`, worker threads included). Logs a line every 15 s while it runs.
 *
 * @param rssFile where the probe writes the peak (bytes)
 */
export async function measure(
  label: string,
  args: string[],
  rssFile: string,
  env: Record<string, string> = {},
): Promise<Measured> {
  const started = process.hrtime.bigint();
  const ticker = setInterval(
    () => log(`${label}: ${Math.round(Number(process.hrtime.bigint() - started) / 1e9)} s …`),
    15_000,
  );
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ['--import', PROBE, ...args], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        ...process.env,
        BENCH_RSS_FILE: rssFile,
        REPORTS_LOG_LEVEL: 'warn',
        REPORTS_LOG_PRETTY: 'false',
        ...env,
      },
    });
    child.on('exit', (c) => resolve(c));
  });
  clearInterval(ticker);
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  let peakRssBytes = 0;
  try {
    peakRssBytes = Number(readFileSync(rssFile, 'utf8'));
  } catch {
    /* the child died before writing it */
  }
  return { wallMs, peakRssBytes, exitCode: code };
}

/** The arguments of `reports-sync sync --source <source>` against `url` into `warehouse`. */
export function syncArgs(url: string, warehouse: string, source: string): string[] {
  return [CLI, 'sync', '--source', source, '--base-url', url, '--warehouse', warehouse];
}

/**
 * Reads the NDJSON export once, untimed, so the simulator (`--cache-exports`) serves the timed syncs from its
 * cache file; then its `/stats` ({@link warmStats}).
 */
export async function warmNdjsonExport(base: string): Promise<void> {
  log('warming the NDJSON export cache …');
  const started = process.hrtime.bigint();
  const res = await request(`${base}/api/v1/public/reports.ndjson`);
  let bytes = 0;
  for await (const chunk of res.body) bytes += (chunk as Buffer).length;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  log(`NDJSON export cache warm: ${mib(bytes)} MiB in ${seconds.toFixed(1)} s`);
  await warmStats(base);
}

/**
 * Asks `/stats` once, untimed: the simulator counts its dataset on the first request of a data state
 * (6–12 s at 10M generated reports on 2 cores, 0.6–0.9 s at 4M) and keeps the counts, as a real upstream
 * serves its counters.
 * The timed sync then measures the sync, not that count.
 */
export async function warmStats(base: string): Promise<void> {
  const started = process.hrtime.bigint();
  const res = await request(`${base}/api/v1/public/reports/stats`);
  await res.body.dump();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  log(`/stats warm: ${res.statusCode} in ${seconds.toFixed(1)} s`);
}

/**
 * Fetches every page of the CSV export once, untimed, as a csv sync will (`REPORTS_CSV_PATH`, default
 * `/api/v1/public/reports.csv`, with `?pageSize=N&page=1`, its 302, then `Link: <…>; rel="next"` to the end),
 * so the simulator (`--cache-exports`) has every page on disk and the timed step measures the sync, not the
 * simulator rendering pages. Bodies are read and discarded. Then `/stats` ({@link warmStats}).
 */
export async function warmCsvPages(base: string, pageSize: string): Promise<void> {
  log(`warming the CSV page cache (pageSize ${pageSize}) …`);
  const started = process.hrtime.bigint();
  const path = process.env.REPORTS_CSV_PATH ?? '/api/v1/public/reports.csv';
  let url: string | undefined = `${base}${path}?pageSize=${pageSize}&page=1`;
  let pages = 0;
  let bytes = 0;
  let redirects = 0;
  while (url !== undefined) {
    const current: string = url;
    const res = await request(current);
    const location = res.headers.location;
    if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
      await res.body.dump();
      if (++redirects > 5) throw new Error(`warming the CSV cache: too many redirects at ${current}`);
      url = new URL(location, current).href;
      continue;
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`warming the CSV cache: ${current} answered ${res.statusCode}`);
    }
    for await (const chunk of res.body) bytes += (chunk as Buffer).length;
    pages++;
    redirects = 0;
    const link = res.headers.link;
    const next = typeof link === 'string' ? /<([^>]+)>\s*;\s*rel="next"/.exec(link)?.[1] : undefined;
    url = next === undefined ? undefined : new URL(next, current).href;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  log(`CSV page cache warm: ${pages} pages, ${mib(bytes)} MiB in ${seconds.toFixed(1)} s`);
  await warmStats(base);
}

/** Advances the simulator by one day; returns what the day did. */
export async function advanceDay(
  base: string,
): Promise<{ added: number; moved: number; unpublished: number }> {
  const res = await request(`${base}/__admin/advance?days=1`, { method: 'POST' });
  const day = (await res.body.json()) as { added: number; moved: number; unpublished: number };
  log(`advanced a day: ${day.added} new reports, ${day.moved} moved, ${day.unpublished} unpublished`);
  return day;
}

/** The latest run of a warehouse's run log: its status, duration (ms) and counters. */
export interface LastRun {
  status: string;
  runMs: number;
  recordsRead: number;
  inserted: number;
  updated: number;
  unchanged: number;
  removed: number;
  error: string | null;
}

/** The latest run in the run log of the warehouse at `path` (opened read-only), or undefined. */
export async function lastRun(path: string): Promise<LastRun | undefined> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const c = await db.connect();
  try {
    const row = (
      await c.runAndReadAll(
        `SELECT status, (epoch_ms(finished_at) - epoch_ms(started_at))::DOUBLE AS ms, records_read::DOUBLE AS rr,
           inserted::DOUBLE AS ins, updated::DOUBLE AS upd, unchanged::DOUBLE AS unch, removed::DOUBLE AS rem,
           error::VARCHAR AS error
         FROM sync_runs ORDER BY started_at DESC LIMIT 1`,
      )
    ).getRowObjectsJS()[0];
    if (!row) return undefined;
    return {
      status: String(row.status),
      runMs: Number(row.ms),
      recordsRead: Number(row.rr),
      inserted: Number(row.ins),
      updated: Number(row.upd),
      unchanged: Number(row.unch),
      removed: Number(row.rem),
      error: row.error === null ? null : String(row.error),
    };
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/** The DuckDB version of the installed `@duckdb/node-api`. */
export function duckdbVersion(): string | undefined {
  try {
    const pkg = JSON.parse(
      readFileSync(join(ROOT, 'node_modules', '@duckdb', 'node-api', 'package.json'), 'utf8'),
    ) as { version?: string };
    return pkg.version;
  } catch {
    return undefined;
  }
}
