import { existsSync, linkSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { EMPTY_KEY, MAX_FILES, type ParquetPart, type Period } from './parquet-layout.js';
import type { PartitionBudget } from './parquet-partitioned.js';
import { choosePeriod, writeEmpty, writePartFiles, type ManifestFile } from './parquet-write.js';
import { qualified } from './published-tables.js';
import type { Watermark } from './watermark.js';

export type { ManifestFile } from './parquet-write.js';

/** The manifest of a Parquet version folder: its watermark and, per part, its period and files. */
export interface ParquetManifest {
  format: 1;
  watermark: Watermark;
  parts: Record<string, { period: Period; files: ManifestFile[] }>;
}

/** The manifest's file name in a version folder (a leading `_` keeps it out of Parquet readers' way). */
export const MANIFEST_FILE = '_publish.json';

/** Keys (per part id) whose files a change set touched: rewritten, the others linked. */
export type ChangedKeys = Map<string, Set<number> | 'all'>;

/** The previous version a publish builds on. */
export interface PreviousParquet {
  dir: string;
  manifest: ParquetManifest;
}

/** Reads a version folder's manifest; undefined when there is none or it is not one this version writes. */
export function readManifest(dir: string): ParquetManifest | undefined {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path)) return undefined;
  try {
    const manifest = JSON.parse(readFileSync(path, 'utf8')) as ParquetManifest;
    return manifest.format === 1 && typeof manifest.watermark?.publishId === 'string' ? manifest : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Writes the Parquet set of the copy attached as `copy` into the new version folder `dir`. With `previous`
 * and `changed`, a part keeps its period and only the files of changed keys are written; the others are
 * hard links to the previous version's files (never modified in place, so both versions stay whole).
 * Otherwise every file is written. Returns the manifest (also written to `dir`) and how many files were
 * written and linked.
 */
export async function writeParquetSet(
  connection: DuckDBConnection,
  copy: string,
  dir: string,
  input: {
    parts: ParquetPart[];
    watermark: Watermark;
    previous?: PreviousParquet;
    changed?: ChangedKeys;
    /** Reads the memory DuckDB holds that the writes cannot use (bytes; parquet-partitioned.ts). */
    heldBytes?: () => Promise<number>;
  },
): Promise<{ manifest: ParquetManifest; written: number; linked: number }> {
  const manifest: ParquetManifest = { format: 1, watermark: input.watermark, parts: {} };
  let linked = 0;
  const budget: PartitionBudget = {
    partitions: Infinity,
    ...(input.heldBytes ? { held: input.heldBytes } : {}),
  };
  mkdirSync(dir, { recursive: true });
  for (const part of input.parts) {
    const changed = input.changed?.get(part.id) ?? new Set<number>();
    const before = input.changed && changed !== 'all' ? input.previous?.manifest.parts[part.id] : undefined;
    let period = before?.period ?? (await choosePeriod(connection, copy, part));
    let kept =
      before && changed !== 'all'
        ? before.files.filter((f) => f.key !== EMPTY_KEY && !changed.has(f.key))
        : [];
    let keys: number[] | 'all' = before && changed !== 'all' ? [...changed] : 'all';
    if (part.period === 'created' && keys !== 'all' && kept.length + keys.length > MAX_FILES) {
      // The data spread over more periods than files allow: the part is written again, coarser.
      period = await choosePeriod(connection, copy, part);
      [kept, keys] = [[], 'all'];
    }
    const files = await writePartFiles(connection, copy, part, period, keys, dir, budget);
    for (const file of kept) {
      mkdirSync(join(dir, part.folder), { recursive: true });
      linkSync(join(input.previous!.dir, file.file), join(dir, file.file));
    }
    linked += kept.length;
    files.push(...kept);
    if (files.length === 0) files.push(await writeEmpty(connection, copy, part, dir));
    manifest.parts[part.id] = { period, files: files.sort((a, b) => a.key - b.key) };
  }
  writeFileSync(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 1)}\n`);
  const files = Object.values(manifest.parts).reduce((n, p) => n + p.files.length, 0);
  return { manifest, written: files - linked, linked };
}

/**
 * How the Parquet set differs from the copy in row counts, per part (the rows of its files against its
 * table's). Undefined when they agree: a change set that missed a file's key shows here.
 */
export async function parquetDifference(
  connection: DuckDBConnection,
  copy: string,
  parts: ParquetPart[],
  manifest: ParquetManifest,
): Promise<string | undefined> {
  for (const part of parts) {
    const reader = await connection.runAndReadAll(`SELECT count(*) AS n FROM ${qualified(copy, part.table)}`);
    const expected = Number(reader.getRowObjectsJS()[0]?.n);
    const written = (manifest.parts[part.id]?.files ?? []).reduce((sum, f) => sum + f.rows, 0);
    if (written !== expected) {
      return `the Parquet files of ${part.id} hold ${written} rows where ${part.table} holds ${expected}`;
    }
  }
  return undefined;
}
