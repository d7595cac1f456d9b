// `npm run bench -- --scale N`: the cycle an operator's warehouse goes through, at N reports and at a
// baseline size, each step in a process of its own (wall time, peak RSS), on one warehouse:
// first NDJSON sync and the first (full) publish; a day later the nightly NDJSON sync and the publish after
// it; a day later the CSV sync; a no-change NDJSON run with conditional exports off; a day later a `recent`
// run and the publish after it (from a snapshot published, untimed, just before). Prints a table per size, the growth
// from the baseline to N, and the goals (docs/performance.md, "Scale"); writes the figures as JSON.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import {
  PUBLISH,
  advanceDay,
  duckdbVersion,
  lastRun,
  log,
  measure,
  mib,
  startSimulator,
  syncArgs,
  warmCsvPages,
  warmNdjsonExport,
  type LastRun,
} from './bench-lib.js';

/** Options of {@link runScaleCycles}. */
export interface ScaleOptions {
  /** N: reports generated. */
  records: number;
  /** The size growth is measured from (0 or N: none). */
  baseline: number;
  /** CSV page size. */
  pageSize: string;
  /** Folder for the warehouses. */
  work: string;
  /** JSON results file of the plain bench; the scale results go beside it (`-scale` before `.json`). */
  out: string;
}

type ScaleStep =
  | 'first NDJSON sync'
  | 'first publish'
  | 'nightly NDJSON'
  | 'nightly publish'
  | 'nightly CSV'
  | 'no-change NDJSON'
  | 'recent'
  | 'publish';

/** One measured step. Times in ms, RSS in bytes; `records` read by the run (publish: current reports). */
interface ScaleResult {
  step: ScaleStep;
  wallMs: number;
  peakRssBytes: number;
  exitCode: number | null;
  records: number;
  recordsPerSecond: number;
  run?: LastRun | undefined;
  /** 1-minute load average when the step started: other work on the machine skews its time. */
  load: number;
}

/** Runs the cycle at the baseline size (when there is one) and at N; prints and writes the figures. */
export async function runScaleCycles(options: ScaleOptions): Promise<void> {
  const { records, baseline } = options;
  if (!Number.isInteger(records) || records < 1) throw new Error(`--scale must be a positive integer`);
  const sizes = baseline > 0 && baseline !== records ? [baseline, records] : [records];
  const results = new Map<number, ScaleResult[]>();
  for (const n of sizes) results.set(n, await runCycle(n, options));
  for (const n of sizes)
    process.stdout.write(`\n${n.toLocaleString('en')} reports\n${table(results.get(n)!)}\n`);
  const big = results.get(records)!;
  const base = sizes.length > 1 ? results.get(baseline) : undefined;
  if (base)
    process.stdout.write(
      `\ngrowth ${baseline.toLocaleString('en')} -> ${records.toLocaleString('en')}\n${growth(base, big)}\n`,
    );
  const goals = scaleGoals(records, big, base);
  process.stdout.write('\n');
  for (const g of goals)
    process.stdout.write(`${g.met ? 'met    ' : 'NOT met'}  ${g.goal.padEnd(58)} ${g.figure}\n`);
  const out = options.out.replace(/\.json$/, '') + '-scale.json';
  mkdirSync(join(out, '..'), { recursive: true });
  const machine = {
    node: process.version,
    duckdb: duckdbVersion(),
    cpus: cpus().length,
    memoryBytes: totalmem(),
  };
  const settings = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k.startsWith('REPORTS_') && !k.includes('KEY')),
  );
  writeFileSync(
    out,
    JSON.stringify(
      { date: new Date().toISOString(), machine, settings, results: Object.fromEntries(results), goals },
      null,
      2,
    ),
  );
  log(`results written to ${out}`);
}

/** One cycle at `n` reports against a simulator of its own, on one warehouse (removed afterwards). */
async function runCycle(n: number, options: ScaleOptions): Promise<ScaleResult[]> {
  const sim = await startSimulator(n);
  const dir = mkdtempSync(join(options.work, `scale-${n}-`));
  const warehouse = join(dir, 'warehouse.duckdb');
  const out: ScaleResult[] = [];
  const step = async (name: ScaleStep, args: string[], env: Record<string, string> = {}) => {
    log(`${n}: ${name} …`);
    const load = loadavg()[0]!;
    const m = await measure(name, args, join(dir, `${out.length}.rss`), env);
    const publishing = name.endsWith('publish');
    const run = publishing ? undefined : await lastRun(warehouse);
    const records = publishing ? await currentReports(warehouse) : (run?.recordsRead ?? 0);
    const r = {
      step: name,
      ...m,
      records,
      recordsPerSecond: Math.round(records / (m.wallMs / 1000)),
      run,
      load,
    };
    log(
      `${name}: ${(m.wallMs / 1000).toFixed(1)} s, ${r.recordsPerSecond} records/s, peak RSS ${mib(m.peakRssBytes)} MiB, ` +
        `exit ${m.exitCode}${run && run.status !== 'succeeded' ? ` (${run.status}: ${run.error})` : ''}`,
    );
    out.push(r);
  };
  try {
    log(`simulator with ${n} generated reports at ${sim.url}`);
    await warmNdjsonExport(sim.url);
    await step('first NDJSON sync', syncArgs(sim.url, warehouse, 'ndjson'));
    await step('first publish', [PUBLISH, warehouse]);
    await advanceDay(sim.url);
    await warmNdjsonExport(sim.url);
    await step('nightly NDJSON', syncArgs(sim.url, warehouse, 'ndjson'));
    // The daemon's publish after the nightly job: the previous snapshot brought forward.
    await step('nightly publish', [PUBLISH, warehouse]);
    await advanceDay(sim.url);
    await warmCsvPages(sim.url, options.pageSize);
    await step('nightly CSV', syncArgs(sim.url, warehouse, 'csv'), {
      REPORTS_CSV_PAGE_SIZE: options.pageSize,
    });
    await warmNdjsonExport(sim.url);
    await step('no-change NDJSON', syncArgs(sim.url, warehouse, 'ndjson'), {
      REPORTS_CONDITIONAL_EXPORTS: 'false',
    });
    // Published untimed, so the last step measures the publish of what the recent run changed.
    log(`${n}: publish before the recent run (not timed) …`);
    await measure('publish before recent', [PUBLISH, warehouse], join(dir, 'before-recent.rss'));
    await advanceDay(sim.url);
    await step('recent', syncArgs(sim.url, warehouse, 'recent'));
    await step('publish', [PUBLISH, warehouse]);
  } finally {
    sim.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

async function currentReports(path: string): Promise<number> {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const c = await db.connect();
  try {
    const rows = (await c.runAndReadAll('SELECT count(*)::DOUBLE FROM current_reports')).getRowsJS();
    return Number(rows[0]?.[0] ?? 0);
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

function table(results: ScaleResult[]): string {
  const rows = [
    ['step', 'wall s', 'run s', 'records', 'records/s', 'peak RSS MiB', 'load', 'exit'],
    ...results.map((r) => [
      r.step,
      (r.wallMs / 1000).toFixed(1),
      r.run ? (r.run.runMs / 1000).toFixed(1) : '-',
      String(r.records),
      String(r.recordsPerSecond),
      mib(r.peakRssBytes),
      r.load.toFixed(1),
      r.exitCode === 0 && (r.run === undefined || r.run.status === 'succeeded') ? '0' : 'FAILED',
    ]),
  ];
  return render(rows);
}

function growth(base: ScaleResult[], big: ScaleResult[]): string {
  const rows = [['step', 'wall time x', 'peak RSS MiB', 'peak RSS growth']];
  for (const b of big) {
    const a = base.find((r) => r.step === b.step);
    if (!a) continue;
    rows.push([
      b.step,
      (b.wallMs / a.wallMs).toFixed(2),
      `${mib(a.peakRssBytes)} -> ${mib(b.peakRssBytes)}`,
      `${(((b.peakRssBytes - a.peakRssBytes) / a.peakRssBytes) * 100).toFixed(1)}%`,
    ]);
  }
  return render(rows);
}

function render(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '))
    .join('\n');
}

/** The goals of docs/performance.md ("Scale") with their figures. */
function scaleGoals(
  n: number,
  big: ScaleResult[],
  base: ScaleResult[] | undefined,
): { goal: string; figure: string; met: boolean }[] {
  const ok = (r: ScaleResult) => r.exitCode === 0 && (r.run === undefined || r.run.status === 'succeeded');
  const max = Math.max(...big.map((r) => r.peakRssBytes));
  const goals = [
    {
      goal: `every step succeeds at ${n}`,
      figure:
        big
          .filter((r) => !ok(r))
          .map((r) => r.step)
          .join(', ') || 'all',
      met: big.every(ok),
    },
    { goal: 'peak RSS of every step <= 1 GiB', figure: `${mib(max)} MiB`, met: max <= 1024 ** 3 },
    {
      goal: 'peak RSS of every step <= 512 MiB (stretch)',
      figure: `${mib(max)} MiB`,
      met: max <= 512 * 1024 ** 2,
    },
  ];
  if (base) {
    const worst = Math.max(
      ...big.map((b) => {
        const a = base.find((r) => r.step === b.step);
        return a ? (b.peakRssBytes - a.peakRssBytes) / a.peakRssBytes : 0;
      }),
    );
    goals.push({
      goal: 'peak RSS growth from the baseline <= 25% (every step)',
      figure: `${(worst * 100).toFixed(1)}% at most`,
      met: worst <= 0.25,
    });
  }
  const first = big.find((r) => r.step === 'first NDJSON sync');
  const nightly = big.find((r) => r.step === 'nightly NDJSON');
  if (first && nightly) {
    const x = nightly.wallMs / first.wallMs;
    goals.push({
      goal: 'nightly NDJSON <= 0.5 x first sync time',
      figure: `${x.toFixed(2)} x`,
      met: x <= 0.5,
    });
  }
  const publish = big.find((r) => r.step === 'publish');
  if (publish) {
    const limit = n >= 10_000_000 ? 10 : 5;
    const s = publish.wallMs / 1000;
    goals.push({
      goal: `publish after the recent run <= ${limit} s`,
      figure: `${s.toFixed(1)} s`,
      met: s <= limit,
    });
  }
  return goals;
}
