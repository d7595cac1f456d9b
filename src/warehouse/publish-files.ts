import { lstatSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';

// The file moves of a publish (publish.ts): each new state appears with one rename.

/** Points `link` at `target` (relative) atomically: a new symlink renamed over the old one. */
export function swapSymlink(link: string, target: string): void {
  const tmp = `${link}.tmp-${process.pid}`;
  rmSync(tmp, { force: true });
  symlinkSync(target, tmp, 'dir');
  const existing = lstatOrUndefined(link);
  // A real folder in the way (an old layout, a copy by hand) cannot be renamed over: move it aside.
  if (existing && !existing.isSymbolicLink()) rmSync(link, { recursive: true, force: true });
  renameSync(tmp, link);
}

/** Removes the temp files of a publish that died (they start with a dot) and `.wal` files next to them. */
export function removeLeftovers(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (/^\.(warehouse\.duckdb|parquet)\.tmp-/.test(name) || /^parquet\.tmp-/.test(name)) {
      rmSync(join(dir, name), { recursive: true, force: true });
    }
  }
}

/** Keeps `current` and the version before it (readers may still be scanning it); removes older ones. */
export function removeOldVersions(dir: string, current: string): void {
  const versions = readdirSync(dir)
    .filter((name) => /^parquet-\d{8}T\d+Z$/.test(name) && name !== current)
    .sort();
  for (const old of versions.slice(0, -1)) rmSync(join(dir, old), { recursive: true, force: true });
}

/** The folder name the symlink `link` points at, or undefined when it is no symlink. */
export function currentVersion(link: string): string | undefined {
  return lstatOrUndefined(link)?.isSymbolicLink() ? readlinkSync(link) : undefined;
}

/** Removes a path, ignoring any error. */
export function removeQuietly(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // Best effort: the next publish removes left-overs too.
  }
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
