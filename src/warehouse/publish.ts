import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { SyncError, errorMessage } from '../util/errors.js';
import { failpoint } from '../util/failpoint.js';
import { Laps } from '../util/laps.js';
import type { ChangeSet } from './change-set.js';
import type { Warehouse } from './database.js';
import { deleteMarkerBytes } from './delete-markers.js';
import { publishedPathFor } from './open-migrated.js';
import { parquetParts } from './parquet-layout.js';
import { copyTableCounts } from './publish-copy.js';
import {
  currentVersion,
  removeLeftovers,
  removeOldVersions,
  removeQuietly,
  swapSymlink,
} from './publish-files.js';
import { COPY, bringCopyForward, type CopyOutcome, type PublishPaths } from './publish-forward.js';
import { parquetDifference, readManifest, writeParquetSet, type PreviousParquet } from './publish-parquet.js';
import { ident, qualified, tableNames } from './published-tables.js';
import { outOfMemoryError } from './out-of-memory-error.js';
import { withThreads } from './threads.js';
import { liveWatermark, writeWatermark, type Watermark } from './watermark.js';

/** The published folder of a warehouse (`data/warehouse.duckdb` → `data/published`). */
export function publishedDirFor(warehousePath: string): string {
  return dirname(publishedPathFor(warehousePath));
}

/** Options of {@link publishSnapshot}. */
export interface PublishOptions {
  /** Rewrite the copy and every Parquet file, whatever the previous publish holds. */
  full?: boolean;
  /**
   * DuckDB `threads` while the copy is written (0: one per core), restored afterwards and never below the
   * instance's (threads.ts); callers pass `REPORTS_DUCKDB_MERGE_THREADS`, as a publish runs between jobs like
   * a merge. Default: the instance's setting.
   */
  threads?: number;
}

/** What {@link publishSnapshot} wrote. Durations are milliseconds. */
export interface PublishResult {
  /** The read-only copy: `<published>/warehouse.duckdb`. */
  databasePath: string;
  /** `<published>/parquet`: a symlink to the current `parquet-<stamp>` folder. */
  parquetPath: string;
  /** Tables of the copy with their row counts (its `publish_watermark` included). */
  tables: { name: string; rows: number }[];
  /** `incremental`: the previous copy with the change set applied; `full`: written whole. */
  mode: 'full' | 'incremental';
  /** Why the publish was full (no previous copy, a migration, `--full`, …). */
  reason?: string;
  /** What the change set of an incremental publish held. */
  changes?: Pick<ChangeSet, 'changedReports' | 'newVersions' | 'appendedVersions'> & { runs: number };
  /**
   * The Parquet set: `incremental` when built on the previous version (files the change set touched
   * written, the others linked), else `full` with why; files written and linked unchanged.
   */
  parquet: { mode: 'full' | 'incremental'; reason?: string; written: number; linked: number };
  databaseMs: number;
  parquetMs: number;
  /** Milliseconds of each step (copy, change set, apply, check, Parquet, …), for the bench. */
  steps: Record<string, number>;
  publishedAt: Date;
}

/**
 * Publishes a read-only snapshot of the warehouse for analysts and dashboards (docs/deployment.md,
 * "Published snapshot"), so that `duckdb -readonly`, BI tools and Spark/Trino read it while the daemon
 * holds the live file:
 *
 * 1. `<published>/warehouse.duckdb`: the previous copy is copied to a temp file in the same folder, the
 *    change set since its watermark applied (change-set.ts), then renamed over the old copy. Without a
 *    usable previous copy (none, no watermark, a migration since, another warehouse) or with `full`, the
 *    temp file is written whole with `COPY FROM DATABASE`. Either way a reader never sees a half-written
 *    file, and one that has the old copy open keeps reading it (POSIX rename).
 * 2. `<published>/parquet/<table>/*.parquet`: files by period (parquet-layout.ts), written into a new
 *    folder `parquet-<stamp>`; files the change set did not touch are hard links to the previous version's.
 *    The `parquet` symlink is swapped to it with one `rename`; the previous version is kept until the next
 *    publish (readers mid-scan), older ones are removed.
 *
 * Both hold what analysts query: no staging tables and no internal hashes; the copy keeps the views
 * `current_reports`, `report_history` and `report_versions`, and records its {@link Watermark} in
 * `publish_watermark`; the Parquet folder in `_publish.json`. A copy and a Parquet set brought forward
 * hold what a full publish writes (test/property/publish-incremental.test.ts); a change set whose result
 * does not count the warehouse's rows is dropped for a full publish.
 *
 * Call it between runs: the caller's job queue makes sure no run writes meanwhile, so the copy is one
 * consistent state. Left-over temp files of a publish that died are removed first.
 *
 * @param dir the published folder (default {@link publishedDirFor} the warehouse)
 * @throws SyncError `PUBLISH_FAILED` naming the folder and the cause (the previous snapshot stays as it was);
 *   when DuckDB ran out of memory, the message says which limit to raise (out-of-memory-error.ts)
 */
export async function publishSnapshot(
  warehouse: Warehouse,
  dir = publishedDirFor(warehouse.path),
  options: PublishOptions = {},
): Promise<PublishResult> {
  const stamp = new Date().toISOString().replace(/[-:.]/g, '');
  const paths = {
    dir,
    database: join(dir, 'warehouse.duckdb'),
    tmpDatabase: join(dir, `.warehouse.duckdb.tmp-${process.pid}-${stamp}`),
    tmpParquet: join(dir, `.parquet.tmp-${process.pid}-${stamp}`),
    version: `parquet-${stamp}`,
  };
  const connection = await warehouse.connect();
  try {
    mkdirSync(dir, { recursive: true });
    removeLeftovers(dir);
    const publishId = `${stamp}-${randomBytes(3).toString('hex')}`;
    return await publish(connection, paths, publishId, options);
  } catch (err) {
    // Detached first: an attached copy would keep its memory (and its file) in a daemon's instance.
    await connection.run(`DETACH DATABASE IF EXISTS ${ident(COPY)}`).catch(() => undefined);
    for (const path of [paths.tmpDatabase, `${paths.tmpDatabase}.wal`, paths.tmpParquet]) removeQuietly(path);
    // Out of memory: the limit to raise, not the disk (publish runs at REPORTS_DUCKDB_MEMORY_LIMIT).
    const limit = await connection
      .runAndReadAll(`SELECT current_setting('memory_limit') AS m`)
      .then((r) => String(r.getRowObjectsJS()[0]?.m ?? ''))
      .catch(() => '');
    const oom = outOfMemoryError(err, {
      memoryLimit: limit,
      readMemoryLimit: '',
      warehousePath: warehouse.path,
      phase: 'publishing',
    });
    throw new SyncError(
      'PUBLISH_FAILED',
      oom
        ? `Publishing the snapshot to ${dir} failed: ${oom.message}`
        : `Publishing the snapshot to ${dir} failed: ${errorMessage(err)}. The previous snapshot is unchanged; ` +
            'check free disk space and that the folder is writable.',
      { context: { dir, ...(oom ? { outOfMemory: oom.context } : {}) }, cause: err },
    );
  } finally {
    connection.closeSync();
  }
}

async function publish(
  connection: DuckDBConnection,
  paths: PublishPaths,
  publishId: string,
  options: PublishOptions,
): Promise<PublishResult> {
  const started = Date.now();
  const laps = new Laps();
  const live = await liveWatermark(connection, publishId);
  const previousParquet = readPreviousParquet(paths.dir);
  laps.lap('watermark');
  // The copy is plain DuckDB work, faster on more threads; writing Parquet was slower on 2 threads of 2
  // shared cores (4M reports: 9.8 against 24 s), so it keeps the instance's.
  const copy = await withThreads(connection, options.threads ?? 1, () =>
    bringCopyForward(connection, paths, live, previousParquet, options, laps),
  );
  await writeWatermark(connection, COPY, live, { mode: copy.mode, reason: copy.reason ?? null });
  const tables = await copyTableCounts(connection, COPY);
  laps.lap('counts');
  // The copy's new rows stay in memory until a checkpoint writes them: written first, they leave the
  // Parquet writers that memory (32 MiB of a 128MiB limit after a 4M nightly run). The `DETACH` below
  // would write them anyway.
  await connection.run(`CHECKPOINT ${ident(COPY)}`);
  laps.lap('checkpoint');
  await failpoint('publish-parquet');
  const parquetStarted = Date.now();
  const parquet = await publishParquet(connection, paths, live, copy);
  const parquetMs = Date.now() - parquetStarted;
  laps.lap('parquet');
  // Checkpoints the copy: part of writing it.
  await connection.run(`DETACH ${ident(COPY)}`);
  laps.lap('detach');
  const databaseMs = Date.now() - started - parquetMs;
  await failpoint('publish-written');
  renameSync(paths.tmpDatabase, paths.database);
  await failpoint('publish-renamed');
  renameSync(paths.tmpParquet, join(paths.dir, paths.version));
  const parquetPath = join(paths.dir, 'parquet');
  swapSymlink(parquetPath, paths.version);
  removeOldVersions(paths.dir, paths.version);
  const changes = copy.changes;
  return {
    databasePath: paths.database,
    parquetPath,
    tables,
    mode: copy.mode,
    ...(copy.reason === undefined ? {} : { reason: copy.reason }),
    ...(changes === undefined
      ? {}
      : {
          changes: {
            runs: changes.runIds.length,
            changedReports: changes.changedReports,
            newVersions: changes.newVersions,
            appendedVersions: changes.appendedVersions,
          },
        }),
    parquet,
    databaseMs,
    parquetMs,
    steps: laps.ms,
    publishedAt: new Date(),
  };
}

/**
 * Writes the new Parquet version folder from the temp copy: from the previous version and the touched
 * keys when the copy was brought forward from the same publish, else whole. A set brought forward whose
 * files do not count the copy's rows is written again whole.
 */
async function publishParquet(
  connection: DuckDBConnection,
  paths: PublishPaths,
  watermark: Watermark,
  copy: CopyOutcome,
): Promise<PublishResult['parquet']> {
  const parts = parquetParts(await tableNames(connection, COPY));
  // Row order means nothing in a Parquet file, and keeping it costs memory (DuckDB's tuning guide). The copy
  // keeps it: `COPY FROM DATABASE` was slower without it, and its order is what lets a file's rows be read
  // by time range (parquet-write.ts).
  await connection.run('SET SESSION preserve_insertion_order = false');
  // Both the warehouse's reports and the copy's were read (the change set, its delete): DuckDB holds the
  // delete markers of both meanwhile (~76 MiB at 4M reports), which the Parquet writes cannot use. Read
  // only when a partitioned write needs them (one scan of each table's row ids).
  let held: Promise<number> | undefined;
  const heldBytes = () =>
    (held ??= (async () =>
      (await deleteMarkerBytes(connection)) +
      (await deleteMarkerBytes(connection, qualified(COPY, 'report_rows'))))());
  let reason =
    copy.mode === 'full' ? 'the copy was written whole' : 'the previous Parquet set holds another publish';
  if (copy.parquet) {
    const set = await writeParquetSet(connection, COPY, paths.tmpParquet, {
      parts,
      watermark,
      heldBytes,
      ...copy.parquet,
    });
    const difference = await parquetDifference(connection, COPY, parts, set.manifest);
    if (difference === undefined) return { mode: 'incremental', written: set.written, linked: set.linked };
    reason = `the change set did not bring the Parquet set to the copy: ${difference}`;
    removeQuietly(paths.tmpParquet);
  }
  const whole = await writeParquetSet(connection, COPY, paths.tmpParquet, { parts, watermark, heldBytes });
  return { mode: 'full', reason, written: whole.written, linked: whole.linked };
}

/** The Parquet version the `parquet` link points at, with its manifest, if it has one this version reads. */
function readPreviousParquet(dir: string): PreviousParquet | undefined {
  const version = currentVersion(join(dir, 'parquet'));
  if (version === undefined) return undefined;
  const manifest = readManifest(join(dir, version));
  return manifest ? { dir: join(dir, version), manifest } : undefined;
}
