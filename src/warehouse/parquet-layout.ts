import { COPY_ONLY_TABLES, WATERMARK_TABLE, isStaging } from './published-tables.js';
import { BUSINESS } from './versions.js';

// The layout of the published Parquet set (docs/deployment.md, "The Parquet set"): every table is a folder
// of files, each file holding the rows of one period of a time column, so a publish rewrites the files of
// the periods a change set touched and links the others from the previous version.

/**
 * How a part's rows are split into files: by year, month, week (from Monday) or day of its time column
 * (UTC), or one file.
 */
export type Period = 'year' | 'month' | 'week' | 'day' | 'all';

/** One kind of file of the Parquet set: rows of a table of the copy, split by a period of a time column. */
export interface ParquetPart {
  /** `folder/prefix`: names the part in the manifest. */
  id: string;
  /** Folder under `parquet/` (what analysts glob: `parquet/<folder>/*.parquet`). */
  folder: string;
  /** File name prefix inside the folder. */
  prefix: string;
  /** Table of the copy the rows are stored in (its storage statistics say where a period's rows are). */
  table: string;
  /** Relation of the copy the files are read from, when not {@link table} itself (a view over it). */
  from?: string;
  /** SQL select list over that table: the files' columns. */
  select: string;
  /** Column whose time says a row's file; null: one file. */
  timeColumn: string | null;
  /**
   * The period of a file. `created`: chosen from the data when the part is written whole (parquet-write.ts:
   * the coarsest whose files hold {@link TARGET_FILE_ROWS} rows or fewer on average, within
   * {@link MAX_FILES} files; an upstream's dates are its own).
   */
  period: Period | 'created';
}

/** At most this many files per part: data spread wider gets a coarser period. */
export const MAX_FILES = 1000;

/**
 * What a `created` part's files hold at most on average, when the period allows: a change rewrites whole
 * files, ~3 µs a row (measured), and many small files slow a reader down.
 */
export const TARGET_FILE_ROWS = 300_000;

const CURRENT_VERSION = `id, last_changed_at AS valid_from, NULL::TIMESTAMPTZ AS valid_to, version_change AS change,
  ${BUSINESS}, version_run_id AS run_id`;
const CLOSED_VERSION = `id, valid_from, valid_to, change, ${BUSINESS}, run_id`;

/** Parts of the known tables; any other table of the copy is one file of its own. */
const KNOWN: readonly Omit<ParquetPart, 'id'>[] = [
  // reports as the view shows them (migration 020: last_seen_at and run_id lifted), stored in report_rows.
  {
    folder: 'reports',
    prefix: 'created-',
    table: 'report_rows',
    from: 'reports',
    select: '*',
    timeColumn: 'created_at',
    period: 'created',
  },
  // report_versions (every version, as the view of the copy): the current ones are the rows of reports.
  {
    folder: 'report_versions',
    prefix: 'current-created-',
    table: 'report_rows',
    select: CURRENT_VERSION,
    timeColumn: 'created_at',
    period: 'created',
  },
  {
    folder: 'report_versions',
    prefix: 'closed-',
    table: 'report_versions_closed',
    select: CLOSED_VERSION,
    timeColumn: 'valid_to',
    period: 'day',
  },
  {
    folder: 'rejected_records',
    prefix: '',
    table: 'rejected_records',
    select: '*',
    timeColumn: 'rejected_at',
    period: 'day',
  },
  {
    folder: 'sync_runs',
    prefix: '',
    table: 'sync_runs',
    select: '*',
    timeColumn: 'started_at',
    period: 'month',
  },
  {
    folder: 'stats_snapshots',
    prefix: '',
    table: 'stats_snapshots',
    select: '*',
    timeColumn: 'taken_at',
    period: 'month',
  },
  {
    folder: 'stats_values',
    prefix: '',
    table: 'stats_values',
    select: '*',
    timeColumn: 'taken_at',
    period: 'month',
  },
  {
    folder: 'drift_events',
    prefix: '',
    table: 'drift_events',
    select: '*',
    timeColumn: 'first_seen',
    period: 'month',
  },
];

/** The parts of the Parquet set of a copy holding `tables`. */
export function parquetParts(tables: readonly string[]): ParquetPart[] {
  const parts = KNOWN.filter((p) => tables.includes(p.table));
  for (const table of tables) {
    if (isStaging(table) || COPY_ONLY_TABLES.has(table) || table === WATERMARK_TABLE) continue;
    if (table === 'report_versions_closed' || parts.some((p) => p.table === table)) continue;
    parts.push({ folder: table, prefix: '', table, select: '*', timeColumn: null, period: 'all' });
  }
  return parts.map((p) => ({ ...p, id: `${p.folder}/${p.prefix}` }));
}

/** SQL giving a row's file key, an integer: 202405 (month), 20240517 (day), 2024 (year), 0 (one file). */
export function keySql(part: ParquetPart, period: Period): string {
  if (part.timeColumn === null || period === 'all') return '0';
  const u = `timezone('UTC', ${part.timeColumn})`;
  if (period === 'year') return `year(${u})`;
  if (period === 'month') return `(year(${u}) * 100 + month(${u}))`;
  if (period === 'week') {
    const w = `date_trunc('week', ${u})`;
    return `(year(${w}) * 10000 + month(${w}) * 100 + day(${w}))`;
  }
  return `(year(${u}) * 10000 + month(${u}) * 100 + day(${u}))`;
}

/** The key of the file an empty part writes (zero rows, so that a glob of its folder still finds a schema). */
export const EMPTY_KEY = -1;

/** The file name (without `.parquet`) of a key. */
export function fileStem(part: ParquetPart, period: Period, key: number): string {
  if (key === EMPTY_KEY) return `${part.prefix}empty`;
  if (period === 'all') return `${part.prefix}all`;
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  if (period === 'year') return `${part.prefix}${pad(key, 4)}`;
  if (period === 'month') return `${part.prefix}${pad(Math.floor(key / 100), 4)}-${pad(key % 100, 2)}`;
  const year = Math.floor(key / 10000);
  const date = `${pad(year, 4)}-${pad(Math.floor(key / 100) % 100, 2)}-${pad(key % 100, 2)}`;
  return `${part.prefix}${period === 'week' ? 'week-' : ''}${date}`;
}

/**
 * A SQL condition selecting the rows of the files `keys`: time ranges on the part's column, which DuckDB's
 * zone maps can skip to (a key expression per row cost ~0.2 s per 1M rows, measured), with the key
 * expression kept for the rows inside them.
 */
export function rowsOfKeysSql(part: ParquetPart, period: Period, keys: readonly number[]): string {
  if (part.timeColumn === null || period === 'all') return 'true';
  if (keys.length === 0) return 'false';
  const ranges = keys.map((key) => {
    const [from, to] = keyRange(period, key);
    return `(${part.timeColumn} >= '${from}'::TIMESTAMPTZ AND ${part.timeColumn} < '${to}'::TIMESTAMPTZ)`;
  });
  const pruning = keys.some((k) => !saneYear(period, k)) ? '' : `(${ranges.join(' OR ')}) AND `;
  return `${pruning}${keySql(part, period)} IN (${keys.join(', ')})`;
}

/** The time range `[from, to)` of a key, as ISO 8601 UTC text. */
export function keyRange(period: Period, key: number): [string, string] {
  const [y, m, d] = keyDate(period, key);
  const days = period === 'week' ? 7 : 1;
  const to =
    period === 'year' ? utc(y + 1, 0, 1) : period === 'month' ? utc(y, m + 1, 1) : utc(y, m, d + days);
  return [utc(y, m, d).toISOString(), to.toISOString()];
}

/** Year, month (0-11) and day a key starts at. */
function keyDate(period: Period, key: number): [number, number, number] {
  if (period === 'year') return [key, 0, 1];
  if (period === 'month') return [Math.floor(key / 100), (key % 100) - 1, 1];
  return [Math.floor(key / 10000), (Math.floor(key / 100) % 100) - 1, key % 100];
}

// setUTCFullYear, unlike Date.UTC, keeps years 0-99 as they are; months and days past their end roll over.
function utc(year: number, month: number, day: number): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  return date;
}

// Ranges are written as ISO text; outside years 1-9999 they are left out (the key expression still holds).
function saneYear(period: Period, key: number): boolean {
  const [y] = keyDate(period, key);
  return y >= 1 && y <= 9998;
}

/**
 * Every key of `period` from the one holding `fromMs` to the one holding `toMs` (epoch ms, UTC), or `all`
 * when there are more than `max`.
 */
export function keysBetween(period: Period, fromMs: number, toMs: number, max: number): number[] | 'all' {
  if (period === 'all') return [0];
  const keys: number[] = [];
  const at = new Date(fromMs);
  const [year, month, day] = [at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()];
  // A week starts on Monday (as DuckDB's date_trunc('week')).
  const start =
    period === 'year'
      ? utc(year, 0, 1)
      : period === 'month'
        ? utc(year, month, 1)
        : utc(year, month, period === 'week' ? day - ((at.getUTCDay() + 6) % 7) : day);
  for (const d = start; d.getTime() <= toMs;) {
    if (keys.length === max) return 'all';
    const [y, m, dd] = [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()];
    keys.push(period === 'year' ? y : period === 'month' ? y * 100 + m : y * 10000 + m * 100 + dd);
    if (period === 'year') d.setUTCFullYear(y + 1);
    else if (period === 'month') d.setUTCMonth(m);
    else d.setUTCDate(dd + (period === 'week' ? 7 : 1));
  }
  return keys;
}
