// `npm run bench`: the speed and memory benchmark of issue #7 (a script, not a test).
// Generates N reports, serves them from the simulator (a child process on 127.0.0.1), and runs one after
// another, each in its own process so wall time and peak RSS are its own: DuckDB's read_json of the same
// NDJSON into a keyed table (the reference), our NDJSON full sync, a no-change re-sync, and our CSV paged
// sync. Prints a table and writes bench/results.json.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '..', '..');
const CLI = join(root, 'dist', 'src', 'cli', 'main.js');
const PROBE = pathToFileURL(join(here, 'rss-probe.js')).href;
const REFERENCE = join(here, 'reference-load.js');

const STEPS = ['reference', 'ndjson', 'resync', 'csv'] as const;
type Step = (typeof STEPS)[number];

/** One measured step. Times in ms, RSS in bytes. */
interface StepResult {
  step: Step | 'ndjson-4x';
  records: number;
  wallMs: number;
  recordsPerSecond: number;
  peakRssBytes: number;
  exitCode: number | null;
}

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    'page-size': { type: 'string', default: '5000' },
    steps: { type: 'string', default: STEPS.join(',') },
    'memory-check': { type: 'boolean', default: false },
    out: { type: 'string', default: join(root, 'bench', 'results.json') },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout
    .write(`Usage: npm run bench -- [--records N] [--page-size N] [--steps ${STEPS.join(',')}] [--memory-check] [--out FILE]

  --records N      reports to generate (default 1000000)
  --page-size N    CSV page size (default 5000)
  --steps LIST     which steps to run, in order (default all)
  --memory-check   also run the NDJSON sync on 4 x N reports and report the peak RSS growth
  --out FILE       JSON results (default bench/results.json)
`);
  process.exit(0);
}
const records = Number(values.records);
if (!Number.isInteger(records) || records < 1)
  throw new Error(`--records must be a positive integer, got ${values.records}`);
const steps = values.steps.split(',').map((s) => s.trim()) as Step[];
for (const s of steps) if (!STEPS.includes(s)) throw new Error(`unknown step ${s}; use ${STEPS.join(',')}`);

const work = mkdtempSync(join(tmpdir(), 'reports-sync-bench-'));
const log = (msg: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Starts `reports-sync simulate --generate n` and resolves with its base URL and a stop function. */
async function startSimulator(n: number): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [CLI, 'simulate', '--generate', String(n), '--log-level', 'warn'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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

/** Runs `node --import rss-probe args` and measures wall time and peak RSS. */
async function measure(label: string, args: string[], env: Record<string, string> = {}) {
  const rssFile = join(work, `${label}.rss`);
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

function result(step: StepResult['step'], n: number, m: Awaited<ReturnType<typeof measure>>): StepResult {
  const r = { step, records: n, ...m, recordsPerSecond: Math.round(n / (m.wallMs / 1000)) };
  log(
    `${step}: ${(m.wallMs / 1000).toFixed(1)} s, ${r.recordsPerSecond} records/s, peak RSS ${mib(m.peakRssBytes)} MiB, exit ${m.exitCode}`,
  );
  return r;
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);

async function runSteps(n: number, which: Step[]): Promise<StepResult[]> {
  const sim = await startSimulator(n);
  const out: StepResult[] = [];
  try {
    log(`simulator with ${n} generated reports at ${sim.url}`);
    const syncArgs = (warehouse: string, source: string) => [
      CLI,
      'sync',
      '--source',
      source,
      '--base-url',
      sim.url,
      '--warehouse',
      warehouse,
    ];
    for (const step of which) {
      log(`${step} …`);
      if (step === 'reference') {
        const file = join(work, 'export.ndjson');
        const res = await request(`${sim.url}/api/v1/public/reports.ndjson`);
        await pipeline(res.body, createWriteStream(file));
        out.push(result(step, n, await measure(step, [REFERENCE, file, join(work, 'reference.duckdb')])));
        rmSync(file, { force: true });
      } else if (step === 'ndjson') {
        out.push(result(step, n, await measure(step, syncArgs(join(work, 'ndjson.duckdb'), 'ndjson'))));
      } else if (step === 'resync') {
        out.push(result(step, n, await measure(step, syncArgs(join(work, 'ndjson.duckdb'), 'ndjson'))));
      } else {
        const r = await measure(step, syncArgs(join(work, 'csv.duckdb'), 'csv'), {
          REPORTS_CSV_PAGE_SIZE: values['page-size'],
        });
        out.push(result(step, n, r));
      }
    }
  } finally {
    sim.stop();
  }
  return out;
}

const results = await runSteps(records, steps);
if (values['memory-check']) {
  const big = await runSteps(records * 4, ['ndjson']);
  out4x(big);
}
function out4x(big: StepResult[]) {
  for (const r of big) results.push({ ...r, step: 'ndjson-4x' });
}
rmSync(work, { recursive: true, force: true });

const by = (s: StepResult['step']) => results.find((r) => r.step === s);
const ref = by('reference');
const nd = by('ndjson');
const table = [
  ['step', 'records', 'wall s', 'records/s', 'peak RSS MiB', 'vs reference', 'exit'],
  ...results.map((r) => [
    r.step,
    String(r.records),
    (r.wallMs / 1000).toFixed(1),
    String(r.recordsPerSecond),
    mib(r.peakRssBytes),
    ref ? (r.recordsPerSecond / ref.recordsPerSecond).toFixed(2) : '-',
    String(r.exitCode),
  ]),
];
const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
process.stdout.write(
  table.map((row) => row.map((c, i) => c.padStart(widths[i]!)).join('  ')).join('\n') + '\n\n',
);

const goals: Record<string, string> = {};
if (ref && nd)
  goals['ndjson >= 0.5 x reference'] = `${(nd.recordsPerSecond / ref.recordsPerSecond).toFixed(2)}`;
if (nd) goals['ndjson peak RSS <= 300 MiB'] = `${mib(nd.peakRssBytes)} MiB`;
const re = by('resync');
if (re && nd) goals['resync <= 0.33 x ndjson time'] = `${(re.wallMs / nd.wallMs).toFixed(2)}`;
const csv = by('csv');
if (csv && nd)
  goals['csv >= 0.7 x ndjson throughput'] = `${(csv.recordsPerSecond / nd.recordsPerSecond).toFixed(2)}`;
const big = by('ndjson-4x');
if (big && nd)
  goals['RSS growth 1x -> 4x < 10%'] =
    `${(((big.peakRssBytes - nd.peakRssBytes) / nd.peakRssBytes) * 100).toFixed(1)}%`;
for (const [goal, figure] of Object.entries(goals)) process.stdout.write(`${goal.padEnd(34)} ${figure}\n`);

const machine = {
  node: process.version,
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  memoryBytes: totalmem(),
};
mkdirSync(join(values.out, '..'), { recursive: true });
writeFileSync(
  values.out,
  JSON.stringify({ date: new Date().toISOString(), machine, records, results, goals }, null, 2),
);
log(`results written to ${values.out}`);
