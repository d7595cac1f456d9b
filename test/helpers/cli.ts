import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../src/util/package-root.js';

/** The built CLI (`npm test` builds first, see `pretest`). */
export const CLI = join(packageRoot(), 'dist', 'src', 'cli', 'main.js');

/** Result of a finished CLI process. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node dist/src/cli/main.js ...args` with a clean REPORTS_* environment plus `env`, and collects
 * its output. Rejects after `timeoutMs` (the process is killed).
 */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 60_000,
): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REPORTS_')));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...base, REPORTS_LOG_PRETTY: 'false', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`reports-sync ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`),
      );
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
