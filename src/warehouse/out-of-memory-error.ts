import { availableMemory } from '../config/machine-memory.js';
import { errorMessage, SyncError } from '../util/errors.js';
import { sizeBytes } from './memory-limit.js';

// DuckDB's out-of-memory errors: "Out of Memory Error: failed to allocate data of size 16.0 MiB (240.9 MiB/
// 256.0 MiB used)", "… could not allocate block of size 256.0 KiB (…)", "failed to pin block" (measured).
const OUT_OF_MEMORY =
  /Out of Memory Error|could not allocate block|failed to allocate data|failed to pin block/i;
const LIMIT_IN_MESSAGE = /\(([\d.]+ [KMGT]?i?B)\/([\d.]+ [KMGT]?i?B) used\)/;

/** True when `err` is DuckDB's out-of-memory error (any of the forms above). */
export function isOutOfMemory(err: unknown): boolean {
  return !(err instanceof SyncError) && OUT_OF_MEMORY.test(errorMessage(err));
}

/** The memory limits a run works with, as configured (DuckDB sizes), to name the one that was reached. */
export interface MemoryLimits {
  /** `REPORTS_DUCKDB_MEMORY_LIMIT`: the merge's (and the reader's) limit. */
  memoryLimit: string;
  /** The limit a sync reads with (`REPORTS_DUCKDB_READ_MEMORY_LIMIT`, at least 16 × the longest record). */
  readMemoryLimit: string;
  /** The warehouse file: DuckDB spills beside it (`<file>.tmp`). */
  warehousePath: string;
  /** What the run (or a publish) was doing when it failed, when known. */
  phase?: 'reading' | 'merging' | 'publishing';
}

const DOING = {
  reading: 'staging the export',
  merging: 'merging the run',
  publishing: 'publishing the snapshot',
} as const;

/**
 * Turns DuckDB's out-of-memory error into a `WAREHOUSE_OUT_OF_MEMORY` {@link SyncError} whose message says
 * which limit was reached and what to set: the setting whose value DuckDB names in its message
 * (`REPORTS_DUCKDB_READ_MEMORY_LIMIT` when it is the reading limit, else `REPORTS_DUCKDB_MEMORY_LIMIT`;
 * when both are the same size, `REPORTS_DUCKDB_MEMORY_LIMIT`, and both while the run was reading), a
 * value to try (twice the limit, at most a quarter of the machine's or the container's memory), and the
 * spill folder, which needs free disk. Returns `undefined` for any other error. A run is not retried: the
 * same run would need the same memory (a publish's partitioned Parquet writes retry smaller batches).
 */
export function outOfMemoryError(err: unknown, limits: MemoryLimits): SyncError | undefined {
  if (!isOutOfMemory(err)) return undefined;
  const message = errorMessage(err);
  const first = message.split('\n')[0]?.trim() ?? message;
  const reached = LIMIT_IN_MESSAGE.exec(message)?.[2];
  const reachedBytes = reached === undefined ? undefined : sizeBytes(reached.replace(' ', ''));
  const near = (a: number | undefined, b: number | undefined) =>
    a !== undefined && b !== undefined && Math.abs(a - b) < 1024 * 1024;
  const readBytes = sizeBytes(limits.readMemoryLimit);
  const alike = near(readBytes, sizeBytes(limits.memoryLimit));
  // Both limits alike (a small machine's auto values, or the daemon, which reads at the merge's): reading
  // runs at the lower of the two, so both must go up; raising the reading one alone changes nothing.
  const both = alike && near(reachedBytes, readBytes) && limits.phase === 'reading';
  const reading = !alike && near(reachedBytes, readBytes);
  const setting = reading ? 'REPORTS_DUCKDB_READ_MEMORY_LIMIT' : 'REPORTS_DUCKDB_MEMORY_LIMIT';
  const current = reachedBytes ?? sizeBytes(reading ? limits.readMemoryLimit : limits.memoryLimit);
  const suggestion = current === undefined ? '1GB' : suggest(current);
  const names = both ? `${setting} and REPORTS_DUCKDB_READ_MEMORY_LIMIT` : setting;
  const example = both
    ? `${setting}=${suggestion} REPORTS_DUCKDB_READ_MEMORY_LIMIT=${suggestion}`
    : `${setting}=${suggestion}`;
  return new SyncError(
    'WAREHOUSE_OUT_OF_MEMORY',
    `DuckDB ran out of memory${reached ? ` at its limit of ${reached}` : ''}${limits.phase ? ` while ${DOING[limits.phase]}` : ''} (${first}). Set ${names} ` +
      `higher (e.g. ${example}), and keep free disk beside the warehouse for what DuckDB ` +
      `spills (${limits.warehousePath}.tmp). ${limits.phase === 'publishing' ? 'The previous snapshot is unchanged.' : 'Nothing was merged; the next run starts from the beginning.'}`,
    {
      context: {
        setting,
        limit: reached ?? null,
        suggested: suggestion,
        phase: limits.phase ?? null,
        cause: first,
      },
      cause: err,
    },
  );
}

/**
 * Twice `bytes`, at most a quarter of the memory this process may use (the container's limit when it has
 * one: a suggestion past it would only move the failure to the kernel's OOM killer), never below `bytes`.
 */
function suggest(bytes: number): string {
  const wanted = Math.max(bytes, Math.min(2 * bytes, availableMemory() / 4));
  return `${Math.ceil(wanted / 2 ** 20)}MiB`;
}
