// Tools of `npm run bench:reader` (reader-bench.ts): wrk runs, slow export readers, first-byte timings.
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';

/** wrk's summary: req/s, latency percentiles (ms), answers that were not 2xx/3xx, socket errors. */
export interface WrkResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx/3xx answers: every request of the bench is valid, so any is a failure (a 503 or a 500). */
  failed: number;
  socketErrors: number;
  /** Process CPU time the reader spent per request (ms), when measured: comparable across loads. */
  cpuMsPerRequest?: number;
}

/** Runs wrk with `args` and parses its summary. */
export function wrk(args: string[]): Promise<WrkResult> {
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

/** wrk, with the CPU time this process (the reader) spent per request measured around it. */
export async function wrkWithCpu(args: string[]): Promise<WrkResult> {
  const before = process.cpuUsage();
  const started = performance.now();
  const result = await wrk(args);
  const cpu = process.cpuUsage(before);
  const requests = (result.requestsPerSecond * (performance.now() - started)) / 1000;
  return { ...result, cpuMsPerRequest: round((cpu.user + cpu.system) / 1000 / requests, 3) };
}

/** `1.23ms`, `850.00us`, `1.20s` → milliseconds. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

/**
 * Seeds each wrk thread's generator differently: every thread has its own Lua state, and a seed computed
 * the same way in each (`os.time()`, an unseeded `math.random`) makes them all ask the same URLs, so half
 * the requests find the page another thread just put in the reader's cache.
 */
export const SEED_PER_THREAD = `local counter = 1
function setup(thread) thread:set("id", counter); counter = counter + 1 end
function init(args) math.randomseed(os.time() * 1000 + id * 7919) end`;

/** A wrk Lua script asking `path` pages `1…maxPage` at random, for every status × destination given. */
export function randomPagesScript(statuses: string[], destinations: string[], maxPage: number): string {
  const list = (xs: string[]) => `{${xs.map((x) => JSON.stringify(x)).join(', ')}}`;
  // No response() hook: it would make wrk parse every answer in Lua and measure wrk instead of the reader;
  // wrk's own "Non-2xx or 3xx responses" counts the failures.
  return `
local statuses = ${list(statuses)}
local destinations = ${list(destinations)}
${SEED_PER_THREAD}
function request()
  local s = statuses[math.random(#statuses)]
  local d = destinations[math.random(#destinations)]
  return wrk.format("GET", "/api/v1/public/reports?status=" .. s .. "&destination=" .. d .. "&pageSize=50&page=" .. math.random(${maxPage}))
end
`;
}

/** One filter of the deep-page scripts and its last page (its current reports / pageSize, rounded up). */
export interface FilterPages {
  status: string;
  destination: string;
  pages: number;
}

/**
 * A wrk Lua script asking, for a filter chosen at random, one of its own pages `1…pages` at random: only
 * pages that hold reports, where {@link randomPagesScript} also asks pages past a small filter's end (an
 * empty answer that costs the reader almost nothing).
 */
export function inRangePagesScript(filters: FilterPages[], pageSize: number): string {
  const rows = filters
    .filter((f) => f.pages > 0)
    .map((f) => `{${JSON.stringify(f.status)}, ${JSON.stringify(f.destination)}, ${f.pages}}`);
  return `
local filters = {${rows.join(', ')}}
${SEED_PER_THREAD}
function request()
  local f = filters[math.random(#filters)]
  return wrk.format("GET", "/api/v1/public/reports?status=" .. f[1] .. "&destination=" .. f[2] .. "&pageSize=${pageSize}&page=" .. math.random(f[3]))
end
`;
}

/** Time to the first body byte and to the end of one GET (ms), and the body's size. */
export function firstByte(url: string): Promise<{ firstByteMs: number; totalMs: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let first = NaN;
    let bytes = 0;
    const req = httpRequest(url, (res) => {
      if (res.statusCode !== 200) reject(new Error(`${url} answered ${res.statusCode}`));
      res.on('data', (d: Buffer) => {
        if (bytes === 0) first = performance.now() - started;
        bytes += d.length;
      });
      res.on('end', () =>
        resolve({ firstByteMs: round(first, 1), totalMs: round(performance.now() - started, 1), bytes }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A client that drains 64 KiB of an export every 5 s. */
export function slowReader(url: string) {
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
export function bodyBytes(url: string, encoding: string): Promise<number> {
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

/** The `q` quantile (0–1) of `values` (nearest rank). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
}

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
