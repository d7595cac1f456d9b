// Measures how long the CLI takes to answer `--help` and `--version` (each command loads its heavy modules,
// DuckDB and fastify, only when it runs), against a bare `node -e 0` on the same machine. Prints the
// median and the fastest of N runs in ms.
//
//   npm run build && node dist/bench/measure-cli-start.js [--runs 15]
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../src/util/package-root.js';

const at = process.argv.indexOf('--runs');
const runs = at > 0 ? Number(process.argv[at + 1]) : 15;
const cli = join(packageRoot(), 'dist', 'src', 'cli', 'main.js');

function time(args: string[]): { median: number; fastest: number } {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args, { stdio: 'ignore' });
    if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}`);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)]!, fastest: ms[0]! };
}

const rows = [
  ['node -e 0 (baseline)', time(['-e', '0'])],
  ['reports-sync --help', time([cli, '--help'])],
  ['reports-sync --version', time([cli, '--version'])],
  ['reports-sync sync --help', time([cli, 'sync', '--help'])],
] as const;
process.stdout.write(`${runs} runs each, Node ${process.version}\n`);
for (const [what, t] of rows) {
  process.stdout.write(
    `${what.padEnd(26)} median ${t.median.toFixed(0).padStart(5)} ms   fastest ${t.fastest.toFixed(0).padStart(5)} ms\n`,
  );
}
