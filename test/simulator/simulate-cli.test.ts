import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { registerSimulate } from '../../src/cli/simulate.js';
import { CLI } from '../helpers/cli.js';
import { packageRoot } from '../../src/util/package-root.js';

async function runInProcess(...args: string[]): Promise<unknown> {
  const program = new Command('reports-sync').exitOverride();
  registerSimulate(program);
  try {
    await program.parseAsync(['node', 'reports-sync', 'simulate', ...args]);
    return undefined;
  } catch (err) {
    return err;
  }
}

describe('reports-sync simulate: option errors (exit code 2)', () => {
  it.each([
    [['--port', 'abc'], 'CLI_INVALID_OPTION', '--port must be an integer from 0 to 65535 (got "abc")'],
    [['--port', '70000'], 'CLI_INVALID_OPTION', '--port must be an integer'],
    [['--generate', 'many'], 'CLI_INVALID_OPTION', '--generate must be an integer'],
    [['--seed', '1.5'], 'CLI_INVALID_OPTION', '--seed must be an integer'],
    [['--advance-days', 'x'], 'CLI_INVALID_OPTION', '--advance-days must be an integer'],
    [['--log-level', 'loud'], 'CLI_INVALID_OPTION', '--log-level must be one of'],
    [['--dataset', 'a.ndjson', '--generate', '5'], 'CLI_INVALID_OPTION', 'exclude each other'],
    [['--generate', '5', '--fault', 'ndjson:explode'], 'FAULT_SPEC_INVALID', 'unknown kind "explode"'],
    [
      ['--dataset', '/nonexistent/r.ndjson'],
      'DATASET_NOT_FOUND',
      'Dataset file not found: /nonexistent/r.ndjson',
    ],
  ])('%j', async (args, code, message) => {
    const err = await runInProcess(...args);
    expect(err).toMatchObject({ code });
    expect(exitCodeFor(err)).toBe(2);
    expect((err as Error).message).toContain(message);
  });
});

// The built CLI is what users run (`npm test` builds first). Without a build that is at least as new as
// the source, this part is skipped: a stale dist/ would test old code.
const builtSimulate = join(packageRoot(), 'dist', 'src', 'cli', 'simulate.js');
const sourceSimulate = join(packageRoot(), 'src', 'cli', 'simulate.ts');
const fresh =
  existsSync(builtSimulate) && statSync(builtSimulate).mtimeMs >= statSync(sourceSimulate).mtimeMs;

describe.skipIf(!fresh)(
  'reports-sync simulate, built CLI (skipped when dist/ is missing or older: npm run build)',
  () => {
    it('prints the base URL first, serves with faults, and stops cleanly on SIGTERM', async () => {
      const child = spawn(
        process.execPath,
        [
          CLI,
          'simulate',
          '--generate',
          '100',
          '--seed',
          '3',
          '--fault',
          'ndjson:status=503,times=1',
          '--log-level',
          'warn',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      try {
        const firstLine = await new Promise<string>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            if (out.includes('\n')) resolve(out.split('\n')[0] ?? '');
          });
          child.once('close', () => reject(new Error(`exited before listening: ${out}`)));
        });
        expect(firstLine).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/);
        const base = firstLine.slice('listening on '.length);
        expect((await fetch(`${base}/api/v1/public/reports.ndjson`)).status).toBe(503);
        const ok = await fetch(`${base}/api/v1/public/reports.ndjson`);
        expect((await ok.text()).split('\n').filter(Boolean)).toHaveLength(100);
      } finally {
        child.kill('SIGTERM');
      }
      expect(await exited).toBe(0);
    });
  },
);
