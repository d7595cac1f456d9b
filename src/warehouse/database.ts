import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { SyncError } from '../util/errors.js';
import { duckdbApi } from './duckdb-api.js';
import { keepLeadingFeff } from './keep-leading-feff.js';
import { describeHolder, lockAdvice, lockHolder } from './lock-holder.js';

// Every connection of the process reads text through the binding's decoder: fix it before any is opened.
keepLeadingFeff();
// The binding writes a TIMESTAMPTZ's text at the machine's offset; times are UTC throughout (see inUtc).
duckdbApi.DuckDBTimestampTZValue.timezoneOffsetInMinutes = 0;

/** Options of {@link openWarehouse}. */
export interface WarehouseOptions {
  /** DuckDB `memory_limit`, e.g. `256MiB`. */
  memoryLimit?: string;
  /** DuckDB `threads`. */
  threads?: number;
  /** Open read-only (analysts' copies; never migrates). */
  readOnly?: boolean;
  /** Where the published snapshot lives, named in the "locked" message. */
  publishedPath?: string;
}

/**
 * The process's one handle on the warehouse file. DuckDB allows one read-write process per file, and two
 * `DuckDBInstance`s on one file in one process silently become two databases (docs/how-a-sync-works.md, measured), so
 * jobs and the reader share this instance and take connections from it.
 */
export interface Warehouse {
  readonly path: string;
  readonly instance: DuckDBInstance;
  /** A new connection on the shared instance (each connection has its own transaction). */
  connect(): Promise<DuckDBConnection>;
  /** Closes the instance; connections become unusable. Idempotent. */
  close(): void;
}

/**
 * Opens (creating the file and its folder when needed) the DuckDB warehouse at `path`.
 *
 * @throws SyncError `WAREHOUSE_LOCKED` when another process holds the file, naming that process
 *   (lock-holder.ts: `reports-sync serve (PID 1234)`), what to do, and the published copy when there is
 *   one; `WAREHOUSE_OPEN` for other failures (unwritable folder, corrupt file).
 */
export async function openWarehouse(path: string, options: WarehouseOptions = {}): Promise<Warehouse> {
  const absolute = resolve(path);
  const settings: Record<string, string> = {};
  if (options.memoryLimit) settings.memory_limit = options.memoryLimit;
  if (options.threads) settings.threads = String(options.threads);
  if (options.readOnly) settings.access_mode = 'READ_ONLY';
  else {
    // What DuckDB spills (joins, aggregates, temp tables, undo data past memory_limit) goes beside the file;
    // its default too, made explicit so docs and the cleanup below can rely on it.
    if (path !== ':memory:') settings.temp_directory = tempDirectoryFor(absolute);
    // Most of a sync's resident memory was native memory outside DuckDB's own accounting: allocator caches
    // the threads keep, and memory freed in bulk (a committed batch, a merge's hash tables) that the
    // allocator held on to. Returning both past 16 MiB lowered a 1M-report sync's peak RSS from ~800 to
    // ~600 MiB at the same CPU time; past 1 MiB, a 10M-report nightly merge peaked at 447 instead of
    // 593 MiB, again at the same CPU time (measured, interleaved runs).
    settings.allocator_flush_threshold = '1MiB';
    settings.allocator_bulk_deallocation_flush_threshold = '1MiB';
  }
  if (options.readOnly) requireWarehouseFile(absolute);
  let instance: DuckDBInstance;
  try {
    if (!options.readOnly) mkdirSync(dirname(absolute), { recursive: true });
    instance = await duckdbApi.DuckDBInstance.create(absolute, settings);
  } catch (err) {
    throw openError(err, absolute, options.publishedPath);
  }
  if (!options.readOnly && path !== ':memory:') removeStaleSpill(tempDirectoryFor(absolute));
  await inUtc(instance);
  let closed = false;
  return {
    path: absolute,
    instance,
    connect: () => instance.connect(),
    close: () => {
      if (closed) return;
      closed = true;
      instance.closeSync();
    },
  };
}

/**
 * Sets the instance's time zone to UTC for every connection. DuckDB takes the machine's zone by default, so
 * a `::date`, a `date_trunc` or a printed `TIMESTAMPTZ` in `reports-sync sql` depended on where it ran
 * (times are UTC throughout: the run log, the reader, PostgreSQL's sessions). It cannot be passed to
 * `DuckDBInstance.create` (the ICU setting is not known then), hence a `SET GLOBAL` once open.
 */
async function inUtc(instance: DuckDBInstance): Promise<void> {
  const connection = await instance.connect();
  try {
    await connection.run(`SET GLOBAL TimeZone = 'UTC'`);
  } finally {
    connection.closeSync();
  }
}

/**
 * Refuses a warehouse path with no file yet, for commands that read one (a publish of a path mistyped
 * would otherwise create and publish an empty warehouse).
 *
 * @throws SyncError `WAREHOUSE_MISSING` naming the path and what to run
 */
export function requireWarehouseFile(path: string): void {
  const absolute = resolve(path);
  if (path === ':memory:' || existsSync(absolute)) return;
  throw new SyncError(
    'WAREHOUSE_MISSING',
    `No warehouse at ${absolute} yet: run \`reports-sync sync\` (or \`npm start\`) first, or pass --warehouse PATH`,
    { context: { path: absolute } },
  );
}

/** DuckDB's spill folder of a warehouse file: `<file>.tmp` beside it. */
export function tempDirectoryFor(warehousePath: string): string {
  return `${resolve(warehousePath)}.tmp`;
}

/**
 * Removes the files a killed process left in the spill folder (DuckDB removes its own on a clean close;
 * after a kill -9 they stay, and a 10M-report merge spills hundreds of MiB). Only called once this process
 * holds the file exclusively and before it ran any statement, so nothing in the folder is in use.
 */
function removeStaleSpill(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}

function openError(err: unknown, path: string, publishedPath?: string): SyncError {
  const message = err instanceof Error ? err.message : String(err);
  const lock = /Conflicting lock is held in (.*?) \(PID (\d+)\)/.exec(message);
  if (lock || /Could not set lock on file/.test(message)) {
    const holder = lockHolder(lock?.[1], lock ? Number(lock[2]) : undefined);
    return new SyncError(
      'WAREHOUSE_LOCKED',
      `The warehouse ${path} is in use by ${describeHolder(holder)}; DuckDB lets one process open it at a ` +
        `time. ${lockAdvice(holder, publishedPath)}`,
      { context: { path, pid: holder.pid, holder: holder.program }, cause: err },
    );
  }
  const hint = openHint(err, message);
  return new SyncError('WAREHOUSE_OPEN', `Cannot open the warehouse ${path}: ${hint ?? message}`, {
    context: { path, cause: (err as NodeJS.ErrnoException).code ?? message.split('\n')[0] },
    cause: err,
  });
}

// What to tell a user for the usual reasons a warehouse cannot be created or opened for writing. `mkdir`
// answers EEXIST/ENOTDIR when a path component is a regular file; DuckDB names the OS error in its text.
function openHint(err: unknown, message: string): string | undefined {
  const code = (err as NodeJS.ErrnoException).code;
  const what = 'choose another --warehouse (REPORTS_WAREHOUSE) or fix the folder, then run again';
  if (code === 'EEXIST' || code === 'ENOTDIR' || /Not a directory/i.test(message))
    return `a part of its folder path is a file, not a folder (${code ?? 'ENOTDIR'}): ${what}`;
  if (code === 'EACCES' || code === 'EPERM' || /Permission denied/i.test(message))
    return `permission denied: ${what}`;
  if (code === 'EROFS' || /Read-only file system/i.test(message))
    return `the folder is on a read-only file system: ${what}`;
  if (code === 'ENOSPC' || /No space left|File too large/i.test(message))
    return `the disk is full or a file-size limit was reached (${message.split('\n')[0]}): free space, then run again`;
  return undefined;
}
