import type { DuckDBConnection } from '@duckdb/node-api';

const UNITS: Record<string, number> = {
  b: 1,
  bytes: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/**
 * Bytes of a DuckDB size as a setting takes it (`128MiB`, `1GB`) or `current_setting('memory_limit')`
 * prints it (`256.0 MiB`); undefined for anything else. Units as DuckDB's docs define them (KB = 1000,
 * KiB = 1024 bytes).
 */
export function sizeBytes(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i.exec(text);
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  return m && unit !== undefined ? Number(m[1]) * unit : undefined;
}

/**
 * The memory limit a sync reads with: `readLimit` (a DuckDB size), but at least 16 × `maxRecordBytes`, so
 * that staging a batch that holds the longest record allowed does not run out of memory. DuckDB's
 * `read_json` needed ~8 × the longest batch line (measured: a 16 MB line loaded at 128MiB, a 24 MB one did
 * not), and a staged line holds a record's unknown fields twice. Returned as `<bytes>B`.
 */
export function readMemoryLimit(readLimit: string, maxRecordBytes: number): string {
  return `${Math.max(sizeBytes(readLimit) ?? 0, 16 * maxRecordBytes)}B`;
}

/**
 * Runs `fn` with DuckDB's `memory_limit` lowered to `limit` (a DuckDB size), then restores the limit it
 * found (as DuckDB prints it: to a tenth of its unit), also when `fn` throws. Never raises it: a limit at
 * or above the current one (or one that is not a size) runs `fn` unchanged. The setting belongs to the
 * whole instance, so a reader sharing it has the lower limit meanwhile. When DuckDB refuses the lower
 * limit (more memory pinned at that moment than it allows), `fn` runs at the current one.
 *
 * Why: a sync's reading only appends to staging, yet DuckDB keeps the blocks it wrote cached up to its
 * limit, which was most of the growth of a sync's peak RSS from 1M to 4M reports; the merge then needs
 * the full limit for its joins.
 *
 * @throws whatever `fn` throws, or DuckDB's error when the setting cannot be read
 */
export async function withMemoryLimit<T>(
  connection: DuckDBConnection,
  limit: string,
  fn: () => Promise<T>,
): Promise<T> {
  const read = await connection.runAndReadAll(`SELECT current_setting('memory_limit') AS m`);
  const before = String(read.getRowObjectsJS()[0]!.m);
  const current = sizeBytes(before);
  const wanted = sizeBytes(limit);
  if (current === undefined || wanted === undefined || wanted >= current) return fn();
  // DuckDB refuses a limit below what is pinned at that moment (a reader's query sharing the instance):
  // the work then runs at the limit it found rather than failing for a setting that only saves memory.
  // (DuckDB 1.5 shows the refused value in the setting all the same: restored either way.)
  const restore = () => connection.run(`SET memory_limit = '${Math.round(current)}B'`).catch(() => undefined);
  const lowered = await connection.run(`SET memory_limit = '${Math.round(wanted)}B'`).then(
    () => true,
    () => false,
  );
  if (!lowered) {
    await restore();
    return fn();
  }
  try {
    return await fn();
  } finally {
    await restore();
  }
}

/**
 * DuckDB's memory in use by what holds it (`duckdb_memory()`: tags such as BASE_TABLE, HASH_TABLE,
 * IN_MEMORY_TABLE), in MiB, and what it spilled to its temp folder, in MiB; tags holding less than 1 MiB
 * are left out. For the log of a run that ran out of memory: it says what filled the limit. Never throws
 * (an empty result when DuckDB cannot answer).
 */
export async function memoryByTag(
  connection: DuckDBConnection,
): Promise<Record<string, { mib: number; spilledMib: number }>> {
  try {
    const rows = (
      await connection.runAndReadAll(
        `SELECT tag, round(memory_usage_bytes / 1048576, 1)::DOUBLE AS mib,
           round(temporary_storage_bytes / 1048576, 1)::DOUBLE AS spilled
         FROM duckdb_memory() WHERE memory_usage_bytes >= 1048576 OR temporary_storage_bytes >= 1048576`,
      )
    ).getRowObjectsJS();
    return Object.fromEntries(
      rows.map((r) => [String(r.tag), { mib: Number(r.mib), spilledMib: Number(r.spilled) }]),
    );
  } catch {
    return {};
  }
}
