import { totalmem } from 'node:os';

const MiB = 2 ** 20;
/** Bounds of the automatic DuckDB `memory_limit` (bytes). */
export const AUTO_MEMORY_LIMIT = { min: 128 * MiB, max: 512 * MiB, share: 1 / 8 } as const;
/** Bounds of the automatic read-side limit (bytes): half the merge's bounds, same share. */
export const AUTO_READ_MEMORY_LIMIT = { min: 128 * MiB, max: 256 * MiB, share: 1 / 16 } as const;

/**
 * The memory this process may use (bytes): the machine's, or the container's limit when it has a lower
 * one (cgroup, `process.constrainedMemory()`).
 */
export function availableMemory(): number {
  const total = totalmem();
  const constrained = (process as { constrainedMemory?: () => number | undefined }).constrainedMemory?.();
  return constrained !== undefined && constrained > 0 && constrained < total ? constrained : total;
}

/**
 * DuckDB's `memory_limit` when the user sets none (`REPORTS_DUCKDB_MEMORY_LIMIT=auto`): an eighth of the
 * available memory, from 128MiB to 512MiB, as `<n>MiB`: a 1 GiB container gets 128MiB, 2 GiB 256MiB and
 * any machine from 4 GiB 512MiB. The rest of a sync's process (Node, the decode workers, the known-line
 * hashes, DuckDB's allocations outside its limit) took ~250–450 MiB at 1M–10M reports: at 4M reports
 * every step peaked under 600 MiB at 256MiB, and the process stays near 1 GiB at 512MiB up to 10M
 * (docs/performance.md, "Scale"). A sixteenth gave a 2 GiB container 128MiB, at which the publish after a
 * 4M nightly run takes ~2.5 × as long (its Parquet written in batches of partitions that fit).
 *
 * @param available bytes (default {@link availableMemory})
 */
export function autoMemoryLimit(available: number = availableMemory()): string {
  const { min, max, share } = AUTO_MEMORY_LIMIT;
  const bytes = Math.min(max, Math.max(min, available * share));
  return `${Math.floor(bytes / MiB)}MiB`;
}

/**
 * DuckDB's `memory_limit` while a sync reads an export, when the user sets none
 * (`REPORTS_DUCKDB_READ_MEMORY_LIMIT=auto`): a sixteenth of the available memory, from 128MiB to 256MiB
 * (a 10M-report re-read ran out at 128MiB: docs/performance.md, "Scale").
 *
 * @param available bytes (default {@link availableMemory})
 */
export function autoReadMemoryLimit(available: number = availableMemory()): string {
  const { min, max, share } = AUTO_READ_MEMORY_LIMIT;
  const bytes = Math.min(max, Math.max(min, available * share));
  return `${Math.floor(bytes / MiB)}MiB`;
}
