import { totalmem } from 'node:os';

const MiB = 2 ** 20;
/** Bounds of the automatic DuckDB `memory_limit` (bytes). */
export const AUTO_MEMORY_LIMIT = { min: 128 * MiB, max: 256 * MiB, share: 1 / 16 } as const;

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
 * DuckDB's `memory_limit` when the user sets none (`REPORTS_DUCKDB_MEMORY_LIMIT=auto`): a sixteenth of the
 * available memory, from 128MiB to 256MiB, as `<n>MiB`. The rest of a sync's process (Node, the decode
 * workers, the known-line hashes, DuckDB's allocations outside its limit) took ~250–450 MiB at 1M–10M
 * reports, so a 2 GiB container gets 128MiB and any machine from 4 GiB the 256MiB the 10M cycle was
 * measured with (docs/performance.md, "Scale": its first CSV run still runs out there). Larger limits
 * made no step faster enough to pay for the memory: the merge spills to `temp_directory` instead.
 *
 * @param available bytes (default {@link availableMemory})
 */
export function autoMemoryLimit(available: number = availableMemory()): string {
  const { min, max, share } = AUTO_MEMORY_LIMIT;
  const bytes = Math.min(max, Math.max(min, available * share));
  return `${Math.floor(bytes / MiB)}MiB`;
}
