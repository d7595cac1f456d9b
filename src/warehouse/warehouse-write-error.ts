import { errorMessage, SyncError } from '../util/errors.js';

// DuckDB reports file-system failures as IO errors naming the file ("Could not write file …: No space
// left on device", "… File too large" under `ulimit -f`, "Cannot open file …: Read-only file system"), and
// after a failed checkpoint it invalidates the database for the rest of the process (measured, DuckDB 1.5.6).
const STORAGE_FAILURE =
  /Could not (write|read|open|create|truncate|sync|fsync|remove|move)|Cannot open file|No space left|File too large|Read-only file system|Permission denied|database has been invalidated|IO Error/i;

/**
 * Turns an error thrown by DuckDB while writing the warehouse into a `WAREHOUSE_WRITE` {@link SyncError}
 * (not retryable) whose message names the warehouse file, quotes DuckDB's first line and says
 * what to do: a full disk, a file-size limit or an unwritable folder. Returns `undefined` for any other
 * error (SQL errors, bugs), which callers report as they are.
 *
 * Why it is safe to say "committed data is intact": DuckDB commits through its write-ahead log, so a write
 * that fails leaves the last committed state on disk (docs/how-a-sync-works.md; proven by test/reliability/disk.test.ts).
 *
 * @param path the warehouse file (absolute), named in the message
 */
export function warehouseWriteError(err: unknown, path: string): SyncError | undefined {
  if (err instanceof SyncError) return undefined;
  const message = errorMessage(err);
  if (!STORAGE_FAILURE.test(message)) return undefined;
  const first = message.split('\n')[0]?.trim() ?? message;
  const invalidated = /invalidated/i.test(message);
  const original = invalidated ? /Original error: "?(.*?)"?$/m.exec(message)?.[1] : undefined;
  return new SyncError(
    'WAREHOUSE_WRITE',
    `Cannot write the warehouse ${path}: ${original ?? first}. The disk may be full, a file-size limit ` +
      `reached or the folder not writable: free space or fix the permissions, then run the sync again. ` +
      `Committed data is intact; this run merged nothing.`,
    { context: { path, cause: original ?? first }, cause: err },
  );
}
