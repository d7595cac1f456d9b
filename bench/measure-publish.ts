// Measures publishing (`reports-sync publish`, warehouse/publish.ts) on a warehouse the CLI synced from a
// running simulator, as an operator's cycle goes: a full publish, a publish that changes nothing, a
// publish after a `recent` run of a simulated day, a publish after that day's nightly NDJSON run, and a
// full publish of the same state for comparison. Each publish runs in its own process
// (bench/publish-once.js) so its wall time and peak RSS (the kernel's high-water mark) are its own; the
// syncs between them are not timed. Prints a table and the ratios, with the load average around them.
//
//   node dist/src/cli/main.js simulate --port 22300 --generate 4000000 --seed 7 --cache-exports &
//   node dist/src/cli/main.js sync --source ndjson --base-url http://127.0.0.1:22300 --warehouse W
//   node dist/bench/measure-publish.js --warehouse W --base-url http://127.0.0.1:22300
//
// It advances the simulator one day. REPORTS_* variables of the environment reach the syncs and publishes
// (e.g. REPORTS_DUCKDB_MEMORY_LIMIT for the nightly sync of a large warehouse).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const here = fileURLToPath(new URL('.', import.meta.url));
const CLI = join(here, '..', 'src', 'cli', 'main.js');
const PROBE = pathToFileURL(join(here, 'rss-probe.js')).href;
const PUBLISH = join(here, 'publish-once.js');

const { values } = parseArgs({
  options: {
    warehouse: { type: 'string' },
    'base-url': { type: 'string' },
    'sync-env': { type: 'string', multiple: true, default: [] },
  },
});
const warehouse = values.warehouse;
const baseUrl = values['base-url'];
if (!warehouse || !baseUrl)
  throw new Error('usage: measure-publish --warehouse W --base-url URL [--sync-env K=V]');
// Settings for the untimed syncs only (e.g. a larger DuckDB memory limit for a nightly run at 4M+).
const syncEnv = Object.fromEntries(values['sync-env'].map((kv) => kv.split('=', 2) as [string, string]));
const work = mkdtempSync(join(tmpdir(), 'reports-sync-measure-publish-'));

/** What publish-once prints, plus what the bench measured around it. */
interface Row {
  step: string;
  wallMs: number;
  peakRssBytes: number;
  mode?: string;
  reason?: string;
  changes?: { runs: number; changedReports: number; newVersions: number; appendedVersions: number };
  parquet?: { mode: string; written: number; linked: number };
  databaseMs?: number;
  parquetMs?: number;
}

/** Runs `node --import rss-probe args`; resolves with wall time, peak RSS and stdout. */
async function run(args: string[], env: Record<string, string> = {}) {
  const rssFile = join(work, 'rss');
  const started = process.hrtime.bigint();
  let stdout = '';
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, ['--import', PROBE, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, BENCH_RSS_FILE: rssFile, REPORTS_LOG_LEVEL: 'warn', ...env },
    });
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.on('exit', resolve);
  });
  if (code !== 0) throw new Error(`${args.join(' ')} exited with ${code}:\n${stdout}`);
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  return { wallMs, peakRssBytes: Number(readFileSync(rssFile, 'utf8')), stdout };
}

async function publish(step: string, full = false): Promise<Row> {
  const r = await run([PUBLISH, warehouse!, ...(full ? ['--full'] : [])]);
  const row: Row = { step, wallMs: r.wallMs, peakRssBytes: r.peakRssBytes, ...JSON.parse(r.stdout) };
  console.log(
    `${step}: ${(row.wallMs / 1000).toFixed(2)} s, ${mib(row.peakRssBytes)} MiB, ${r.stdout.trim()}`,
  );
  return row;
}

async function sync(source: string): Promise<void> {
  const r = await run(
    [CLI, 'sync', '--source', source, '--base-url', baseUrl!, '--warehouse', warehouse!],
    syncEnv,
  );
  console.log(`(sync ${source}: ${(r.wallMs / 1000).toFixed(1)} s, not timed as a publish)`);
}

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);

const loadBefore = loadavg();
const rows: Row[] = [];
try {
  rows.push(await publish('full publish', true));
  rows.push(await publish('publish, nothing changed'));
  const day = await fetch(`${baseUrl}/__admin/advance?days=1`, { method: 'POST' }).then((r) => r.json());
  console.log(`advanced a day: ${JSON.stringify(day)}`);
  await sync('recent');
  rows.push(await publish('publish after a recent run'));
  await sync('ndjson');
  rows.push(await publish('publish after the nightly run'));
  rows.push(await publish('full publish of the same state', true));
} finally {
  rmSync(work, { recursive: true, force: true });
}
const loadAfter = loadavg();

console.log(
  '\n| step | mode (copy / Parquet) | wall s | peak RSS MiB | copy s | Parquet s | files written / linked | change set |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const c = r.changes;
  const change = c
    ? `${c.runs} runs, ${c.changedReports} reports (${c.newVersions} new versions), ${c.appendedVersions} closed versions`
    : (r.reason ?? '');
  console.log(
    `| ${r.step} | ${r.mode} / ${r.parquet?.mode} | ${(r.wallMs / 1000).toFixed(2)} | ${mib(r.peakRssBytes)} | ` +
      `${((r.databaseMs ?? 0) / 1000).toFixed(2)} | ${((r.parquetMs ?? 0) / 1000).toFixed(2)} | ` +
      `${r.parquet?.written} / ${r.parquet?.linked} | ${change} |`,
  );
}
const [full, , recent, nightly, fullAgain] = rows;
console.log(
  `\nratios: recent / full ${(recent!.wallMs / full!.wallMs).toFixed(3)}, ` +
    `nightly / full of the same state ${(nightly!.wallMs / fullAgain!.wallMs).toFixed(3)}; ` +
    `load average ${loadBefore.map((l) => l.toFixed(1)).join(' ')} before, ${loadAfter.map((l) => l.toFixed(1)).join(' ')} after`,
);
