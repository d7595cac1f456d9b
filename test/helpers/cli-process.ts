import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { CLI } from './cli.js';

/** A running `reports-sync` child process whose output is collected as it comes. */
export interface CliProcess {
  child: ChildProcessWithoutNullStreams;
  /** stdout and stderr so far. */
  output(): { stdout: string; stderr: string };
  /** Resolves when stdout or stderr has matched `pattern`; rejects when the process ends first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code and signal once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `node [nodeArgs] dist/src/cli/main.js ...args` with a clean REPORTS_* environment plus `env` (JSON
 * logs), without waiting for it: for tests that act on the process while it runs (SIGKILL, SIGTERM).
 */
export function spawnCli(
  args: string[],
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): CliProcess {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REPORTS_')));
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], {
    env: { ...base, REPORTS_LOG_PRETTY: 'false', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((l) => l());
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    notify();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    notify();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => {
      resolve({ code, signal });
      notify();
    }),
  );
  let ended = false;
  void exited.then(() => (ended = true));
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(stdout) || pattern.test(stderr)) {
            done();
            resolve();
          } else if (ended || child.exitCode !== null) {
            done();
            reject(new Error(`process ended before ${String(pattern)}:\n${stdout}\n${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          child.kill('SIGKILL');
          reject(new Error(`no ${String(pattern)} within ${timeoutMs} ms:\n${stdout}\n${stderr}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}
