import { availableParallelism } from 'node:os';
import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Runs `fn` with DuckDB's `threads` raised to at least `threads` (0: `os.availableParallelism()`), then
 * restores the setting it found, also when `fn` throws. `threads` is a setting of the whole instance, so
 * a reader sharing it gets the extra threads meanwhile; it is never lowered below what it was.
 *
 * Why: a sync reads with 1 DuckDB thread while its decode workers keep the cores busy, but its merge runs
 * alone and is plain DuckDB work (joins, inserts), which takes the cores it is given.
 *
 * @throws whatever `fn` throws, or DuckDB's error when the setting cannot be read or changed
 */
export async function withThreads<T>(
  connection: DuckDBConnection,
  threads: number,
  fn: () => Promise<T>,
): Promise<T> {
  const read = await connection.runAndReadAll(`SELECT current_setting('threads')::INTEGER AS t`);
  const before = Number(read.getRowObjectsJS()[0]!.t);
  const wanted = Math.max(before, threads === 0 ? availableParallelism() : threads);
  if (wanted === before) return fn();
  await connection.run(`SET threads = ${wanted}`);
  try {
    return await fn();
  } finally {
    await connection.run(`SET threads = ${before}`).catch(() => undefined);
  }
}
