import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';

// The folders a reader spools export bodies in (spool-cache.ts), and the removal of those a killed
// reader left behind.

/** A reader's spool folder in the OS temp folder: the prefix, {@link spoolTag}, `-`, the process id, `-`. */
const SPOOL_PREFIX = 'reports-sync-reader-';
/** The spool folders of this process's caches (several readers may run in one process). */
const OWN_SPOOLS = new Set<string>();

/**
 * A new spool folder in the OS temp folder (`reports-sync-reader-<tag>-<pid>-XXXXXX`), after removing those
 * of readers that are gone ({@link removeStaleSpools}). Returns its path.
 *
 * @throws the file system's error when the temp folder cannot be written
 */
export function createSpoolFolder(): string {
  removeStaleSpools(tmpdir());
  const dir = mkdtempSync(join(tmpdir(), `${SPOOL_PREFIX}${spoolTag()}-${process.pid}-`));
  OWN_SPOOLS.add(dir);
  return dir;
}

/** Removes a folder {@link createSpoolFolder} made, with its files. */
export function removeSpoolFolder(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  OWN_SPOOLS.delete(dir);
}

/**
 * Where process ids mean this process's: 8 hex digits of the host name and the PID namespace
 * (`/proc/self/ns/pid`). Containers sharing a temp folder each have their own ids (the daemon is PID 1 in
 * every one): a folder of another tag is never judged by its id.
 */
export function spoolTag(): string {
  let namespace = '';
  try {
    namespace = readlinkSync('/proc/self/ns/pid');
  } catch {
    // Not Linux: the host name alone.
  }
  return createHash('sha1').update(`${hostname()}\n${namespace}`).digest('hex').slice(0, 8);
}

/**
 * Removes the spool folders of readers that are gone (killed: `close` never ran, and each may hold up to
 * `REPORTS_READER_SPOOL_BYTES`). Only folders of this host and PID namespace ({@link spoolTag}) are
 * judged: those whose process id is not alive, or is this process's own but not one of its caches'
 * folders (a restarted container gives its process the id the dead one had). Never throws.
 */
export function removeStaleSpools(tmp: string): void {
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return;
  }
  const tag = spoolTag();
  for (const name of names) {
    const m = /^reports-sync-reader-([0-9a-f]{8})-(\d+)-/.exec(name);
    const pid = Number(m?.[2]);
    if (m?.[1] !== tag || !Number.isSafeInteger(pid) || OWN_SPOOLS.has(join(tmp, name))) continue;
    if (pid !== process.pid && isAlive(pid)) continue;
    try {
      rmSync(join(tmp, name), { recursive: true, force: true });
    } catch {
      // Another user's, or in use: left alone.
    }
  }
}

/** Whether a process with id `pid` exists (signal 0 checks without sending; EPERM: it exists, not ours). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
