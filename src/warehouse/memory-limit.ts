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
 * the full limit for its joins. `fn` is told whether the limit was lowered: only then does nothing else
 * share the instance (the daemon, whose reader shares it, reads at the full limit).
 *
 * @throws whatever `fn` throws, or DuckDB's error when the setting cannot be read
 */
export async function withMemoryLimit<T>(
  connection: DuckDBConnection,
  limit: string,
  fn: (lowered: boolean) => Promise<T>,
): Promise<T> {
  const read = await connection.runAndReadAll(`SELECT current_setting('memory_limit') AS m`);
  const before = String(read.getRowObjectsJS()[0]!.m);
  const current = sizeBytes(before);
  const wanted = sizeBytes(limit);
  if (current === undefined || wanted === undefined || wanted >= current) return fn(false);
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
    return fn(false);
  }
  try {
    return await fn(true);
  } finally {
    await restore();
  }
}

/**
 * Evicts the blocks DuckDB holds cached and no longer pinned (those a finished scan read), so their memory
 * goes back to the system instead of staying resident until DuckDB needs the room. DuckDB has no statement
 * that drops its cache; it evicts unpinned blocks to meet a lower `memory_limit`. So the limit is set to
 * 1 MiB, which DuckDB refuses once it has evicted what it could (its deleted-row markers and anything
 * pinned stay), and the limit it found is then restored, refused or not.
 *
 * Only for an instance nothing else uses at that moment: a query running meanwhile on another connection
 * could fail for the moment's limit. Run it on a connection with no transaction open: the refusal is an
 * error, which aborts an open transaction. Measured on a 10M-report warehouse: after a scan of the
 * line-hash column, DuckDB's `BASE_TABLE` memory fell from 162 to 75 MiB and the process's RSS by 89 MiB.
 *
 * @throws DuckDB's error when the limit cannot be read or restored
 */
export async function evictCachedBlocks(connection: DuckDBConnection): Promise<void> {
  const read = await connection.runAndReadAll(`SELECT current_setting('memory_limit') AS m`);
  const current = sizeBytes(String(read.getRowObjectsJS()[0]!.m));
  if (current === undefined) return;
  await connection.run(`SET memory_limit = '1MiB'`).catch(() => undefined);
  await connection.run(`SET memory_limit = '${Math.round(current)}B'`);
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
