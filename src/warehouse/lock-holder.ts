import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { formatAge } from '../util/format-age.js';

/** Who holds a warehouse file: what it is to a person, and its PID when DuckDB named one. */
export interface LockHolder {
  /** `reports-sync serve`, `reports-sync run`, `python3 report.py`, or DuckDB's own name of the program. */
  program: string;
  pid?: number | undefined;
  /** The reports-sync command the holder runs (`serve`, `run`, `sync`, …), when it is reports-sync. */
  command?: string | undefined;
}

/**
 * The holder of a warehouse from DuckDB's lock error (`Conflicting lock is held in /usr/bin/node (PID
 * 1234)`): its command line read from `/proc/<pid>/cmdline` (Linux) names a reports-sync command as
 * `reports-sync <command>` and another program by its name and script, never with its arguments (they may
 * hold credentials). Where `/proc` is not readable, DuckDB's program path stands.
 */
export function lockHolder(program: string | undefined, pid: number | undefined): LockHolder {
  const fallback: LockHolder = { program: program ?? 'another process', pid };
  if (pid === undefined) return fallback;
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((a) => a !== '');
  } catch {
    return fallback;
  }
  const script = argv.findIndex((a, i) => i > 0 && /(^|\/)(reports-sync|main\.[cm]?[jt]s)$/.test(a));
  if (script > 0 && (basename(argv[script]!) === 'reports-sync' || /cli[/\\]main\./.test(argv[script]!))) {
    const command = argv.slice(script + 1).find((a) => !a.startsWith('-'));
    return { program: command ? `reports-sync ${command}` : 'reports-sync', pid, command };
  }
  if (argv.length === 0) return fallback;
  const name = basename(argv[0]!);
  const file = argv.slice(1).find((a) => !a.startsWith('-') && /\.\w+$/.test(a));
  return { program: file ? `${name} ${basename(file)}` : name, pid };
}

/** `reports-sync serve (PID 1234)`: a holder as a message names it. */
export function describeHolder(holder: LockHolder): string {
  return holder.pid === undefined ? holder.program : `${holder.program} (PID ${holder.pid})`;
}

/**
 * What to do about a held warehouse, for the "locked" message: per holder (the daemon runs syncs itself,
 * `serve` only reads, anything else is waited for or stopped), and the published copy to query meanwhile
 * when one exists (with its age), never a path that does not exist.
 */
export function lockAdvice(holder: LockHolder, publishedPath: string | undefined): string {
  const stop = holder.pid === undefined ? 'stop it' : `stop it (Ctrl-C where it runs, or kill ${holder.pid})`;
  const what =
    holder.command === 'run'
      ? 'The daemon runs the syncs itself: its status page (`/` at its REPORTS_PORT) shows the schedule and the ' +
        `runs, and reports-sync status reads its published copy once one exists; ${stop} to run this command instead.`
      : holder.command === 'serve'
        ? `It serves the API from the warehouse and changes nothing; ${stop} to write to the warehouse.`
        : `Wait for it to end, or ${stop}.`;
  if (publishedPath === undefined || !existsSync(publishedPath)) return what;
  const age = formatAge(Date.now() - statSync(publishedPath).mtime.getTime());
  return `${what} To query meanwhile, open the read-only published copy ${publishedPath} (written ${age} ago).`;
}
