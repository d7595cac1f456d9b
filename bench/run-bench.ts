// `npm run bench`: the speed and memory benchmark (a script, not a test).
// Generates N reports, serves them from the simulator (a child process on 127.0.0.1), and runs one after
// another, each in its own process so wall time and peak RSS are its own: DuckDB's read_json of the same
// NDJSON into a keyed table (the reference), our NDJSON full sync, a no-change re-sync, and our CSV paged
// sync. With --repeat R every step runs R times (fresh warehouses each time) and the table shows medians.
// Freshness steps on the warehouse the NDJSON sync filled: `not-modified` (the same export asked
// conditionally: a 304), `recent` (after the simulator advanced a day: the list endpoint's new reports) and
// `publish` (the snapshot after that small change, brought forward from one published before it).
// Prints a table and the goals, and writes bench/results.json.
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import {
  ROOT as root,
  PUBLISH,
  advanceDay,
  duckdbVersion,
  lastRun,
  log,
  measure as measureIn,
  mib,
  startSimulator,
  syncArgs as syncArgsOf,
  warmCsvPages,
  warmNdjsonExport,
} from './bench-lib.js';
import { runScaleCycles } from './scale-cycle.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const REFERENCE = join(here, 'reference-load.js');

const STEPS = ['reference', 'ndjson', 'resync', 'not-modified', 'recent', 'publish', 'csv'] as const;
type Step = (typeof STEPS)[number];

/** One measured step. Times in ms, RSS in bytes. */
interface StepResult {
  step: Step | 'ndjson-4x';
  records: number;
  wallMs: number;
  recordsPerSecond: number;
  peakRssBytes: number;
  exitCode: number | null;
  /** `recent`: new reports of the simulated day before it. */
  added?: number;
  /** `not-modified`, `recent`: the run's own duration in the run log (the daemon's cost: no process start). */
  runMs?: number;
}

/** Duration (ms) of the latest run in a warehouse's run log. */
async function lastRunMs(path: string): Promise<number | undefined> {
  return (await lastRun(path))?.runMs;
}

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    'page-size': { type: 'string', default: '5000' },
    steps: { type: 'string', default: STEPS.join(',') },
    'memory-check': { type: 'boolean', default: false },
    repeat: { type: 'string', default: '1' },
    scale: { type: 'string' },
    'scale-baseline': { type: 'string', default: '1000000' },
    work: { type: 'string' },
    out: { type: 'string', default: join(root, 'bench', 'results.json') },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout
    .write(`Usage: npm run bench -- [--records N] [--page-size N] [--steps ${STEPS.join(',')}] [--repeat R] [--memory-check] [--out FILE]

  --records N      reports to generate (default 1000000)
  --page-size N    CSV page size (default 5000)
  --steps LIST     which steps to run, in order (default all)
  --repeat R       run the steps R times and report medians (default 1)
  --memory-check   also run the NDJSON sync on 4 x N reports and report the peak RSS growth
  --out FILE       JSON results (default bench/results.json)
  --scale N        the nightly cycle at N reports instead (docs/performance.md, "Scale"): first NDJSON
                   sync and publish, a day then the nightly NDJSON sync and publish, a day then the CSV
                   sync (--page-size), a no-change NDJSON run (conditional exports off), a day then a
                   recent run and the publish after it; each
                   step's wall time, records/s and peak RSS, and their growth from --scale-baseline
  --scale-baseline N  the size the growth is measured from (default 1000000; 0: none)
  --work DIR       where the warehouses go (default the system's temp folder; 10M takes ~6 GB)

The syncs run with the configuration of the environment (REPORTS_DUCKDB_MEMORY_LIMIT, REPORTS_BATCH_SIZE, …).
`);
  process.exit(0);
}
const records = Number(values.records);
if (!Number.isInteger(records) || records < 1)
  throw new Error(`--records must be a positive integer, got ${values.records}`);
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1)
  throw new Error(`--repeat must be a positive integer, got ${values.repeat}`);
const steps = values.steps.split(',').map((s) => s.trim()) as Step[];
for (const s of steps) if (!STEPS.includes(s)) throw new Error(`unknown step ${s}; use ${STEPS.join(',')}`);

const work = mkdtempSync(join(values.work ?? tmpdir(), 'reports-sync-bench-'));
if (values.scale !== undefined) {
  await runScaleCycles({
    records: Number(values.scale),
    baseline: Number(values['scale-baseline']),
    pageSize: values['page-size'],
    work,
    out: values.out,
  });
  rmSync(work, { recursive: true, force: true });
  process.exit(0);
}

/** Runs `node --import rss-probe args` and measures wall time and peak RSS. */
async function measure(label: string, args: string[], env: Record<string, string> = {}) {
  return measureIn(label, args, join(work, `${label}.rss`), env);
}

function result(step: StepResult['step'], n: number, m: Awaited<ReturnType<typeof measure>>): StepResult {
  const r = { step, records: n, ...m, recordsPerSecond: Math.round(n / (m.wallMs / 1000)) };
  log(
    `${step}: ${(m.wallMs / 1000).toFixed(1)} s, ${r.recordsPerSecond} records/s, peak RSS ${mib(m.peakRssBytes)} MiB, exit ${m.exitCode}`,
  );
  return r;
}

/** Runs `which` `reps` times against one simulator of `n` reports; fresh warehouses every repetition. */
async function runSteps(n: number, which: Step[], reps: number): Promise<StepResult[]> {
  const sim = await startSimulator(n);
  const out: StepResult[] = [];
  try {
    log(`simulator with ${n} generated reports at ${sim.url}`);
    const syncArgs = (warehouse: string, source: string) => syncArgsOf(sim.url, warehouse, source);
    let csvWarm = false;
    let ndjsonWarm = false;
    for (let rep = 1; rep <= reps; rep++) {
      const tag = reps > 1 ? ` (run ${rep}/${reps})` : '';
      const dir = mkdtempSync(join(work, 'rep-'));
      for (const step of which) {
        if (step === 'csv' && !csvWarm) {
          await warmCsvPages(sim.url, values['page-size']);
          csvWarm = true;
        }
        if ((step === 'ndjson' || step === 'resync') && !ndjsonWarm) {
          await warmNdjsonExport(sim.url);
          ndjsonWarm = true;
        }
        log(`${step}${tag} …`);
        if (step === 'reference') {
          ndjsonWarm = true; // its download below fills the cache
          const file = join(dir, 'export.ndjson');
          const res = await request(`${sim.url}/api/v1/public/reports.ndjson`);
          await pipeline(res.body, createWriteStream(file));
          out.push(result(step, n, await measure(step, [REFERENCE, file, join(dir, 'reference.duckdb')])));
          rmSync(file, { force: true });
        } else if (step === 'ndjson' || step === 'resync') {
          // The re-sync reads the same export into the warehouse the full sync just filled (unconditionally:
          // it measures re-reading an unchanged export, not the 304 of the not-modified step).
          const env: Record<string, string> =
            step === 'resync' ? { REPORTS_CONDITIONAL_EXPORTS: 'false' } : {};
          out.push(result(step, n, await measure(step, syncArgs(join(dir, 'ndjson.duckdb'), 'ndjson'), env)));
        } else if (step === 'not-modified') {
          const r = result(step, n, await measure(step, syncArgs(join(dir, 'ndjson.duckdb'), 'ndjson')));
          out.push({ ...r, runMs: await lastRunMs(join(dir, 'ndjson.duckdb')) });
        } else if (step === 'recent') {
          // The publish step measures what the daemon does after a recent run: bringing the previous
          // snapshot forward. That snapshot is published here, untimed.
          if (which.includes('publish'))
            await measure('publish-before', [PUBLISH, join(dir, 'ndjson.duckdb')]);
          const day = await advanceDay(sim.url);
          const r = result(step, n, await measure(step, syncArgs(join(dir, 'ndjson.duckdb'), 'recent')));
          out.push({ ...r, added: day.added, runMs: await lastRunMs(join(dir, 'ndjson.duckdb')) });
          ndjsonWarm = false; // the exports changed
          csvWarm = false;
        } else if (step === 'publish') {
          out.push(result(step, n, await measure(step, [PUBLISH, join(dir, 'ndjson.duckdb')])));
        } else {
          const r = await measure(step, syncArgs(join(dir, 'csv.duckdb'), 'csv'), {
            REPORTS_CSV_PAGE_SIZE: values['page-size'],
          });
          out.push(result(step, n, r));
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    sim.stop();
  }
  return out;
}

const loadBefore = loadavg();
const runs = await runSteps(records, steps, repeat);
if (values['memory-check']) {
  for (const r of await runSteps(records * 4, ['ndjson'], repeat)) runs.push({ ...r, step: 'ndjson-4x' });
}
rmSync(work, { recursive: true, force: true });
const loadAfter = loadavg();

/** The median run of each step (by wall time), in first-seen order. */
function medians(all: StepResult[]): StepResult[] {
  const order = [...new Set(all.map((r) => r.step))];
  return order.map((step) => {
    const sorted = all.filter((r) => r.step === step).sort((a, b) => a.wallMs - b.wallMs);
    const mid = sorted[Math.floor((sorted.length - 1) / 2)]!;
    const rss = sorted.map((r) => r.peakRssBytes).sort((a, b) => a - b);
    return { ...mid, peakRssBytes: rss[Math.floor((rss.length - 1) / 2)]! };
  });
}
const results = medians(runs);
const by = (s: StepResult['step']) => results.find((r) => r.step === s);
const ref = by('reference');
const nd = by('ndjson');
const spread = (step: StepResult['step']) => {
  const walls = runs.filter((r) => r.step === step).map((r) => r.wallMs / 1000);
  return walls.length > 1 ? `${Math.min(...walls).toFixed(1)}–${Math.max(...walls).toFixed(1)}` : '';
};
const table = [
  ['step', 'records', 'wall s', 'range s', 'records/s', 'peak RSS MiB', 'vs reference', 'exit'],
  ...results.map((r) => [
    r.step,
    String(r.records),
    (r.wallMs / 1000).toFixed(1),
    spread(r.step),
    String(r.recordsPerSecond),
    mib(r.peakRssBytes),
    ref ? (r.recordsPerSecond / ref.recordsPerSecond).toFixed(2) : '-',
    runs.filter((x) => x.step === r.step).every((x) => x.exitCode === 0) ? '0' : 'FAILED',
  ]),
];
const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
process.stdout.write(
  `\n${repeat > 1 ? `medians of ${repeat} runs\n` : ''}` +
    table.map((row) => row.map((c, i) => c.padStart(widths[i]!)).join('  ')).join('\n') +
    '\n\n',
);

/** Each goal of the load-path redesign with its figure and whether it is met (docs/performance.md). */
const goals: { goal: string; figure: string; met: boolean }[] = [];
if (ref && nd) {
  const x = nd.recordsPerSecond / ref.recordsPerSecond;
  goals.push({
    goal: 'NDJSON sync >= 0.35 x reference records/s',
    figure: `${x.toFixed(2)} x`,
    met: x >= 0.35,
  });
}
if (nd) {
  goals.push({
    goal: 'NDJSON sync peak RSS <= 400 MiB',
    figure: `${mib(nd.peakRssBytes)} MiB`,
    met: nd.peakRssBytes <= 400 * 1024 * 1024,
  });
}
const re = by('resync');
if (re && nd) {
  const x = re.wallMs / nd.wallMs;
  goals.push({
    goal: 'no-change re-sync <= 0.25 x first sync time',
    figure: `${x.toFixed(2)} x`,
    met: x <= 0.25,
  });
}
const csv = by('csv');
if (csv && nd) {
  const x = csv.recordsPerSecond / nd.recordsPerSecond;
  goals.push({ goal: 'CSV sync >= 0.7 x NDJSON records/s', figure: `${x.toFixed(2)} x`, met: x >= 0.7 });
}
const notModified = by('not-modified');
// The freshness goals are about the run as the daemon runs it: its own duration in the run log, without
// the process start, migration check and summary of a one-shot CLI (shown beside it).
const runFigure = (r: StepResult) =>
  `${((r.runMs ?? r.wallMs) / 1000).toFixed(2)} s run (${(r.wallMs / 1000).toFixed(2)} s process)`;
if (notModified) {
  const s = (notModified.runMs ?? notModified.wallMs) / 1000;
  goals.push({ goal: 'no-change full run with a 304 <= 1 s', figure: runFigure(notModified), met: s <= 1 });
}
const recent = by('recent');
if (recent) {
  const s = (recent.runMs ?? recent.wallMs) / 1000;
  goals.push({
    goal: 'recent run after a simulated day <= 2 s',
    figure: `${runFigure(recent)}, ${recent.added ?? '?'} new reports`,
    met: s <= 2,
  });
}
const pub = by('publish');
if (pub) {
  const s = pub.wallMs / 1000;
  goals.push({ goal: 'publish after the recent run <= 5 s', figure: `${s.toFixed(2)} s`, met: s <= 5 });
}
const big = by('ndjson-4x');
if (big && nd) {
  const growth = (big.peakRssBytes - nd.peakRssBytes) / nd.peakRssBytes;
  goals.push({
    goal: 'peak RSS growth 1x -> 4x records < 10%',
    figure: `${(growth * 100).toFixed(1)}% (${mib(nd.peakRssBytes)} -> ${mib(big.peakRssBytes)} MiB)`,
    met: growth < 0.1,
  });
}
// Goals whose steps did not run are listed too, so the output always names all of them.
const unmeasured = [
  ['NDJSON sync >= 0.35 x reference records/s', 'steps reference,ndjson'],
  ['NDJSON sync peak RSS <= 400 MiB', 'step ndjson'],
  ['no-change re-sync <= 0.25 x first sync time', 'steps ndjson,resync'],
  ['CSV sync >= 0.7 x NDJSON records/s', 'steps ndjson,csv'],
  ['peak RSS growth 1x -> 4x records < 10%', 'step ndjson with --memory-check'],
].filter(([goal]) => !goals.some((g) => g.goal === goal));
for (const g of goals)
  process.stdout.write(`${g.met ? 'met    ' : 'NOT met'}  ${g.goal.padEnd(46)} ${g.figure}\n`);
for (const [goal, needs] of unmeasured)
  process.stdout.write(`not run  ${goal!.padEnd(46)} (needs ${needs})\n`);

const machine = {
  node: process.version,
  duckdb: duckdbVersion(),
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model,
  memoryBytes: totalmem(),
  // Other processes on the machine skew wall times: 1-minute load average before and after.
  loadAverage: { before: loadBefore[0], after: loadAfter[0] },
};
const settings = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => k.startsWith('REPORTS_') && !k.includes('KEY')),
);
mkdirSync(join(values.out, '..'), { recursive: true });
writeFileSync(
  values.out,
  JSON.stringify(
    { date: new Date().toISOString(), machine, settings, records, repeat, results, runs, goals },
    null,
    2,
  ),
);
log(`results written to ${values.out}`);
