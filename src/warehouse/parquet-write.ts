import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import {
  EMPTY_KEY,
  MAX_FILES,
  TARGET_FILE_ROWS,
  fileStem,
  keyRange,
  keySql,
  keysBetween,
  rowsOfKeysSql,
  type ParquetPart,
  type Period,
} from './parquet-layout.js';
import { writePartitioned, type PartitionBudget } from './parquet-partitioned.js';
import { literal, qualified } from './published-tables.js';

// Writing the files of a part (publish-parquet.ts). Two ways: a `COPY` per file, whose time range DuckDB's
// zone maps skip to when the table is stored in about that order (rows are appended as they come: in
// time order for runs, versions and most exports), or `COPY … PARTITION_BY` over the whole table, in
// batches of keys that fit the memory limit (parquet-partitioned.ts).
// On 1M reports stored in time order, the files of 12 months took ~1.0-1.5 s one by one against ~1.6-3.7 s
// partitioned (interleaved, 2 shared cores); on a table in no such order one by one reads it per file.

/** A file of a part: its key (parquet-layout.ts), path inside the version folder, and rows. */
export interface ManifestFile {
  key: number;
  file: string;
  rows: number;
}

/** One by one while the row groups read for all files stay within this many times the table's rows. */
const SCAN_FACTOR = 2;
/** At most this many files are written one by one (a time span wider than that is written partitioned). */
const MAX_ONE_BY_ONE = 20_000;

/** The relation a part's files are read from in the copy. */
function source(copy: string, part: ParquetPart): string {
  return qualified(copy, part.from ?? part.table);
}

/** A row group's span of a part's time column, from DuckDB's storage statistics (epoch ms). */
interface Span {
  lo: number;
  hi: number;
  rows: number;
}

/**
 * Writes the files of `keys` (or of every key the table holds) of a part into the version folder `dir`.
 * Keys without rows get no file. Returns the files written with their rows. `budget`, shared by the parts
 * of one Parquet set, bounds the partitions a partitioned `COPY` opens (parquet-partitioned.ts).
 */
export async function writePartFiles(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
  period: Period,
  keys: number[] | 'all',
  dir: string,
  budget?: PartitionBudget,
): Promise<ManifestFile[]> {
  if (keys !== 'all' && keys.length === 0) return [];
  mkdirSync(join(dir, part.folder), { recursive: true });
  if (part.timeColumn === null || period === 'all') {
    return counted(connection, dir, [await writeFile(connection, copy, part, period, dir)]);
  }
  // One file: one `COPY` of its range reads no more than a partitioned one would, whatever the storage
  // (reading every segment's statistics first took ~0.3 s at 4M reports, measured).
  if (keys !== 'all' && keys.length === 1) {
    return counted(connection, dir, [await writeFile(connection, copy, part, period, dir, keys[0])]);
  }
  const spans = await storageSpans(connection, copy, part);
  const wanted = keys === 'all' && spans ? keysOfSpans(spans, period, MAX_ONE_BY_ONE) : keys;
  if (spans && wanted !== 'all' && rowsRead(spans, period, wanted) <= SCAN_FACTOR * total(spans)) {
    const files: ManifestFile[] = [];
    for (const key of wanted) files.push(await writeFile(connection, copy, part, period, dir, key));
    return counted(connection, dir, files);
  }
  const files = await writePartitioned(connection, copy, part, period, keys, dir, budget);
  return counted(
    connection,
    dir,
    files.map((f) => ({ ...f, rows: 0 })),
  );
}

/**
 * A part's period: a fixed one, or for `created` the coarsest of year, month, week, day whose files hold
 * {@link TARGET_FILE_ROWS} rows or fewer on average; the finest within {@link MAX_FILES} files when none
 * does (1M reports a year: months; 10M: weeks; 40M: days). Counted from the stored span of the column
 * (cheap), or from the rows when its statistics cannot be read.
 */
export async function choosePeriod(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
): Promise<Period> {
  if (part.period !== 'created') return part.period;
  const spans = await storageSpans(connection, copy, part);
  const rows = spans ? total(spans) : await countRowsOf(connection, copy, part);
  let chosen: Period = 'all';
  for (const period of ['year', 'month', 'week', 'day'] as const) {
    const files = spans
      ? keysOfSpans(spans, period, MAX_FILES)
      : await countKeys(connection, copy, part, period);
    if (files === 'all' || files.length > MAX_FILES) break;
    chosen = period;
    if (rows <= TARGET_FILE_ROWS * Math.max(1, files.length)) break;
  }
  return chosen;
}

async function countRowsOf(connection: DuckDBConnection, copy: string, part: ParquetPart): Promise<number> {
  const reader = await connection.runAndReadAll(`SELECT count(*) AS n FROM ${source(copy, part)}`);
  return Number(reader.getRowObjectsJS()[0]?.n);
}

/** The keys a period gives the part's rows (only their number matters: a list of that length). */
async function countKeys(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
  period: Period,
): Promise<number[]> {
  const reader = await connection.runAndReadAll(
    `SELECT count(DISTINCT ${keySql(part, period)}) AS n FROM ${source(copy, part)}`,
  );
  return new Array<number>(Number(reader.getRowObjectsJS()[0]?.n)).fill(0);
}

/** The file of one key (or the whole table), written with one `COPY` (its rows not counted yet). */
async function writeFile(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
  period: Period,
  dir: string,
  key = 0,
): Promise<ManifestFile> {
  const file = join(part.folder, `${fileStem(part, period, key)}.parquet`);
  const where = period === 'all' ? 'true' : rowsOfKeysSql(part, period, [key]);
  await connection.run(
    `COPY (SELECT ${part.select} FROM ${source(copy, part)} WHERE ${where})
     TO ${literal(join(dir, file))} (FORMAT parquet)`,
  );
  return { key, file, rows: 0 };
}

/** `files` with their rows counted (one footer read for all), those without rows removed. */
async function counted(
  connection: DuckDBConnection,
  dir: string,
  files: ManifestFile[],
): Promise<ManifestFile[]> {
  await countRows(connection, dir, files);
  for (const f of files) if (f.rows === 0) rmSync(join(dir, f.file));
  return files.filter((f) => f.rows > 0);
}

/** Writes a zero-row file of a part (so that a glob of an empty table's folder still finds its columns). */
export async function writeEmpty(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
  dir: string,
): Promise<ManifestFile> {
  const file = join(part.folder, `${fileStem(part, 'all', EMPTY_KEY)}.parquet`);
  mkdirSync(join(dir, part.folder), { recursive: true });
  await connection.run(
    `COPY (SELECT ${part.select} FROM ${source(copy, part)} LIMIT 0) TO ${literal(join(dir, file))} (FORMAT parquet)`,
  );
  return { key: EMPTY_KEY, file, rows: 0 };
}

async function countRows(connection: DuckDBConnection, dir: string, files: ManifestFile[]): Promise<void> {
  if (files.length === 0) return;
  const paths = files.map((f) => literal(join(dir, f.file))).join(', ');
  const reader = await connection.runAndReadAll(
    `SELECT file_name, num_rows FROM parquet_file_metadata([${paths}])`,
  );
  const rows = new Map(reader.getRowObjectsJS().map((r) => [String(r.file_name), Number(r.num_rows)]));
  for (const f of files) f.rows = rows.get(join(dir, f.file)) ?? 0;
}

/**
 * The span of the part's time column in each row group of its table, from `pragma_storage_info` (the
 * min/max DuckDB skips row groups by). Undefined when a statistic cannot be read: then no guess is made.
 */
async function storageSpans(
  connection: DuckDBConnection,
  copy: string,
  part: ParquetPart,
): Promise<Span[] | undefined> {
  const reader = await connection.runAndReadAll(
    `WITH segments AS (
       SELECT row_group_id AS g, count AS n,
         epoch_ms(TRY_CAST(regexp_extract(stats, 'Min: ([^,\\]]+)', 1) AS TIMESTAMPTZ)) AS lo,
         epoch_ms(TRY_CAST(regexp_extract(stats, 'Max: ([^,\\]]+)', 1) AS TIMESTAMPTZ)) AS hi
       FROM pragma_storage_info(${literal(qualified(copy, part.table))})
       WHERE column_name = $column AND segment_type <> 'VALIDITY')
     SELECT sum(n) AS n, min(lo) AS lo, max(hi) AS hi, bool_or(lo IS NULL OR hi IS NULL) AS unknown
     FROM segments GROUP BY g`,
    { column: part.timeColumn },
  );
  const rows = reader.getRowObjectsJS();
  if (rows.some((r) => r.unknown === true)) return undefined;
  return rows.map((r) => ({ lo: Number(r.lo), hi: Number(r.hi), rows: Number(r.n) }));
}

/** Every key between the earliest and the latest time stored, or `all` when there are more than `max`. */
function keysOfSpans(spans: Span[], period: Period, max: number): number[] | 'all' {
  if (spans.length === 0) return [];
  const lo = Math.min(...spans.map((s) => s.lo));
  const hi = Math.max(...spans.map((s) => s.hi));
  return keysBetween(period, lo, hi, max);
}

/** Rows of the row groups that one `COPY` per key reads (the groups whose span meets the key's range). */
function rowsRead(spans: Span[], period: Period, keys: number[]): number {
  let rows = 0;
  for (const key of keys) {
    const [from, to] = keyRange(period, key).map((iso) => Date.parse(iso));
    for (const s of spans) if (s.lo < to! && s.hi >= from!) rows += s.rows;
  }
  return rows;
}

function total(spans: Span[]): number {
  return spans.reduce((n, s) => n + s.rows, 0);
}
