import { existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { sizeBytes } from './memory-limit.js';
import { isOutOfMemory } from './out-of-memory-error.js';
import { fileStem, keySql, rowsOfKeysSql, type ParquetPart, type Period } from './parquet-layout.js';
import { literal, qualified } from './published-tables.js';

// A partitioned `COPY` keeps a buffer per open partition and per thread (DuckDB's COLUMN_DATA), which it
// cannot spill while it appends to it. Measured on the 4M-report table (weekly files, 54 weeks): with no
// deleted rows in it, one `COPY` of every week fit at 128MiB on one thread and ran out at 96MiB; after a
// nightly run, when DuckDB also held the table's 36 MiB of delete markers (delete-markers.ts), 39 weeks fit
// at 128MiB and 54 did not, on two threads 13 fit and 22 did not, at 64MiB 8 fit and 13 did not. That is
// ~2–2.3 MiB for each partition on each thread, whatever its rows (260,000 rows spread over 54 weeks ran
// out at 64MiB where 600,000 rows in 8 weeks fit), plus a few MiB, on top of the markers. The keys are
// therefore written in batches that fit, each its own `COPY`. Each batch reads the whole table again when its
// rows are in no time order (~5 s a batch at 4M reports): the price of fitting, paid only by small limits.

/** MiB of the limit a partitioned `COPY` needs whatever its partitions, besides what DuckDB holds. */
const BASE_MIB = 8;
/** MiB each open partition needs on each thread (measured ~2–2.3). */
const PARTITION_MIB = 2.5;
/** Partitions written without first reading what DuckDB holds (8 × 2.5 MiB: small beside any limit). */
const FEW_PARTITIONS = 8;

/**
 * What bounds the partitions a `COPY` of one Parquet set opens at once. `partitions` is lowered when one ran
 * out of memory, so that the parts written after it start from what fit (Infinity until then). `held`
 * reads the memory DuckDB holds that no `COPY` can use (bytes: the delete markers of the tables read),
 * called once, at the first partitioned write.
 */
export interface PartitionBudget {
  partitions: number;
  held?: () => Promise<number>;
  heldBytes?: number;
}

/** A file written: its key (parquet-layout.ts) and path inside the version folder; rows not counted yet. */
export interface PartitionedFile {
  key: number;
  file: string;
}

/**
 * How many partitions one `COPY … PARTITION_BY` may open at DuckDB's `memory_limit` (bytes) on `threads`
 * threads when DuckDB holds `heldBytes` it cannot evict: `(limit − held − 8 MiB) / (2.5 MiB × threads)`,
 * at least 1. A limit that cannot be read (undefined) sets no bound (Infinity). Figures measured above.
 */
export function partitionsPerCopy(
  memoryLimitBytes: number | undefined,
  threads: number,
  heldBytes = 0,
): number {
  if (memoryLimitBytes === undefined || !Number.isFinite(memoryLimitBytes)) return Infinity;
  const mib = (memoryLimitBytes - heldBytes) / 2 ** 20;
  return Math.max(1, Math.floor((mib - BASE_MIB) / (PARTITION_MIB * Math.max(1, threads))));
}

/**
 * The files of `keys` (or every key the part's rows hold) of a part, written with partitioned `COPY`s of at
 * most {@link partitionsPerCopy} keys each, into scratch folders, then renamed to their names in `dir`.
 * Keys without rows get no file. The rows of the files are not counted here. A `COPY` that runs out of
 * memory is written again with half its keys (down to one key), and `budget` keeps that size for the next.
 *
 * @throws DuckDB's error when a `COPY` fails (out of memory included); its scratch folder is left for the
 *   caller's removal of the version folder
 */
export async function writePartitioned(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
  period: Period,
  keys: number[] | 'all',
  dir: string,
  budget: PartitionBudget = { partitions: Infinity },
): Promise<PartitionedFile[]> {
  const pending = await resolved(connection, copy, part, period, keys);
  if (pending.length === 0) return [];
  const [limit, threads] = await limitAndThreads(connection);
  // A few partitions fit beside what DuckDB holds (and a batch that does not is halved): reading what it
  // holds (0.1–0.2 s a table at 4M–10M reports) is left to writes of more.
  if (pending.length > FEW_PARTITIONS) budget.heldBytes ??= (await budget.held?.()) ?? 0;
  let max = Math.min(budget.partitions, partitionsPerCopy(limit, threads, budget.heldBytes ?? 0));
  const files: PartitionedFile[] = [];
  for (let i = 0, done = 0; pending.length > 0; i++) {
    const batch = pending.slice(0, max);
    // Every key at once: no filter to evaluate.
    const rows = keys === 'all' && done === 0 && batch.length === pending.length ? 'all' : batch;
    const scratch = join(dir, `.write-${part.folder}-${part.prefix}-${i}`);
    rmSync(scratch, { recursive: true, force: true });
    try {
      await copyPartitioned(connection, copy, part, period, rows, scratch);
    } catch (err) {
      // What else holds memory at that moment is not known here: fewer partitions at once, down to one.
      if (!isOutOfMemory(err) || batch.length === 1) throw err;
      rmSync(scratch, { recursive: true, force: true });
      max = Math.max(1, Math.ceil(batch.length / 2));
      budget.partitions = max;
      continue;
    }
    pending.splice(0, batch.length);
    done += batch.length;
    files.push(...moveOut(scratch, dir, part, period));
  }
  return files;
}

/** One partitioned `COPY` of the rows of `batch` (or all) into `scratch`, a folder per key. */
async function copyPartitioned(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
  period: Period,
  batch: number[] | 'all',
  scratch: string,
): Promise<void> {
  const where = batch === 'all' ? 'true' : rowsOfKeysSql(part, period, batch);
  await connection.run(
    `COPY (SELECT ${part.select}, ${keySql(part, period)} AS __key FROM ${qualified(copy, part.from ?? part.table)}
       WHERE ${where})
     TO ${literal(scratch)} (FORMAT parquet, PARTITION_BY (__key), FILENAME_PATTERN 'data_{i}')`,
  );
}

/** The files a partitioned `COPY` wrote under `scratch`, renamed into `dir`; `scratch` removed. */
function moveOut(scratch: string, dir: string, part: ParquetPart, period: Period): PartitionedFile[] {
  const files: PartitionedFile[] = [];
  for (const folder of existsSync(scratch) ? readdirSync(scratch) : []) {
    const key = Number(folder.slice('__key='.length));
    readdirSync(join(scratch, folder))
      .sort()
      .forEach((name, i) => {
        const file = join(part.folder, `${fileStem(part, period, key)}${i === 0 ? '' : `-${i}`}.parquet`);
        renameSync(join(scratch, folder, name), join(dir, file));
        files.push({ key, file });
      });
  }
  rmSync(scratch, { recursive: true, force: true });
  return files;
}

/** DuckDB's `memory_limit` in bytes (undefined when not a size) and `threads`. */
async function limitAndThreads(connection: DuckDBConnection): Promise<[number | undefined, number]> {
  const row = (
    await connection.runAndReadAll(
      `SELECT current_setting('memory_limit') AS m, current_setting('threads')::INTEGER AS t`,
    )
  ).getRowObjectsJS()[0]!;
  return [sizeBytes(String(row.m)), Number(row.t)];
}

/**
 * `keys` (each once), or for `all` the keys the part's rows hold (one scan of its time column), ascending.
 *
 * @throws Error when a row has no time (a NULL key): it could be filed under no period
 */
async function resolved(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
  period: Period,
  keys: number[] | 'all',
): Promise<number[]> {
  if (keys !== 'all') return [...new Set(keys)].sort((a, b) => a - b);
  const reader = await connection.runAndReadAll(
    `SELECT DISTINCT ${keySql(part, period)} AS k FROM ${qualified(copy, part.from ?? part.table)} ORDER BY 1`,
  );
  const found = reader.getRowObjectsJS().map((r) => r.k);
  if (found.some((k) => k === null)) {
    throw new Error(`${part.id}: rows without ${part.timeColumn ?? 'a time'} cannot be filed by ${period}`);
  }
  return found.map(Number);
}
