import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI } from './cli.js';

/** Polls `check` every `everyMs` until it returns a value other than undefined/false; rejects after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A `reports-sync run` child process. */
export interface SpawnedDaemon {
  child: ChildProcess;
  /** Base URL from its first stdout line (`listening on <url>`). */
  url: string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `node dist/src/cli/main.js run ...args` (or `node ...argv`; cwd `cwd`, default ours) with a clean
 * REPORTS_* environment plus `env` (JSON logs, port 0), and resolves once it prints `listening on`.
 * The process is killed (SIGKILL) if it is still running when `cleanup` is called.
 */
export async function spawnDaemon(
  env: Record<string, string>,
  options: { args?: string[]; cwd?: string; argv?: string[]; timeoutMs?: number } = {},
): Promise<SpawnedDaemon & { cleanup(): void }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REPORTS_')));
  const child = spawn(process.execPath, options.argv ?? [CLI, 'run', ...(options.args ?? [])], {
    cwd: options.cwd,
    env: { ...base, REPORTS_LOG_PRETTY: 'false', REPORTS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  const url = await waitFor(
    'the daemon to print "listening on"',
    () => {
      if (gone) throw new Error(`reports-sync run exited early\nstdout: ${stdout}\nstderr: ${stderr}`);
      return /^listening on (\S+)$/m.exec(stdout)?.[1];
    },
    options.timeoutMs ?? 60_000,
  );
  return {
    child,
    url,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    cleanup: () => {
      if (!gone) child.kill('SIGKILL');
    },
  };
}

/** The JSON log lines of a process's stderr (lines that are not JSON are skipped). */
export function logLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return {};
      }
    });
}

/** The daemon's job gauges from `GET /metrics`: which jobs run and which wait (`registerDaemonMetrics`). */
export async function jobGauges(url: string): Promise<{ running: string[]; queued: string[] }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const jobsAt = (metric: string) =>
    [...text.matchAll(new RegExp(`^${metric}\\{job="([^"]+)"\\} 1$`, 'gm'))].map((m) => m[1]!);
  return { running: jobsAt('reports_sync_job_running'), queued: jobsAt('reports_sync_job_queued') };
}
