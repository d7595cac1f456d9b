import { randomBytes } from 'node:crypto';
import { constants, copyFileSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { SyncError, errorMessage } from '../util/errors.js';
import { failpoint } from '../util/failpoint.js';
import { planChangeSet, type ChangeSet } from './change-set.js';
import type { Warehouse } from './database.js';
import { publishedPathFor } from './open-migrated.js';
import { addChangedKeys } from './parquet-changes.js';
import { parquetParts } from './parquet-layout.js';
import {
  applyChangeSet,
  copyDifference,
  copyTableCounts,
  copyTooSparse,
  writeFullCopy,
} from './publish-copy.js';
import {
  currentVersion,
  removeLeftovers,
  removeOldVersions,
  removeQuietly,
  swapSymlink,
} from './publish-files.js';
import {
  parquetDifference,
  readManifest,
  writeParquetSet,
  type ChangedKeys,
  type PreviousParquet,
} from './publish-parquet.js';
import { currentDatabase, ident, literal, qualified, tableNames } from './published-tables.js';
import { withThreads } from './threads.js';
import { liveWatermark, readWatermark, writeWatermark, type Watermark } from './watermark.js';

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
 * hold what a full publish writes (test/warehouse/publish-incremental.test.ts); a change set whose result
 * does not count the warehouse's rows is dropped for a full publish.
 *
 * Call it between runs: the caller's job queue makes sure no run writes meanwhile, so the copy is one
 * consistent state. Left-over temp files of a publish that died are removed first.
 *
 * @param dir the published folder (default {@link publishedDirFor} the warehouse)
 * @throws SyncError `PUBLISH_FAILED` naming the folder and the cause (the previous snapshot stays as it was)
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
    for (const path of [paths.tmpDatabase, `${paths.tmpDatabase}.wal`, paths.tmpParquet]) removeQuietly(path);
    throw new SyncError(
      'PUBLISH_FAILED',
      `Publishing the snapshot to ${dir} failed: ${errorMessage(err)}. The previous snapshot is unchanged; ` +
        'check free disk space and that the folder is writable.',
      { context: { dir }, cause: err },
    );
  } finally {
    connection.closeSync();
  }
}

interface PublishPaths {
  dir: string;
  database: string;
  tmpDatabase: string;
  tmpParquet: string;
  version: string;
}

const COPY = `publish_${process.pid}`;

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

/** How the temp copy (attached as {@link COPY}) was made, and for the Parquet set what it builds on. */
interface CopyOutcome {
  mode: 'full' | 'incremental';
  reason?: string;
  changes?: ChangeSet;
  /** The previous Parquet version and the keys the change set touched, when it holds the same publish. */
  parquet?: { previous: PreviousParquet; changed: ChangedKeys };
}

/**
 * Brings the temp copy to the live warehouse's state: the previous copy plus the change set since its
 * watermark, or, when there is none or it cannot be used, a full copy. Leaves it attached as {@link COPY}.
 */
async function bringCopyForward(
  connection: DuckDBConnection,
  paths: PublishPaths,
  live: Watermark,
  previousParquet: PreviousParquet | undefined,
  options: PublishOptions,
  laps: Laps,
): Promise<CopyOutcome> {
  let reason = options.full ? 'a full publish was asked for' : 'no published copy yet';
  if (!options.full && existsSync(paths.database)) {
    try {
      const forward = await applyToPreviousCopy(connection, paths, live, previousParquet, laps);
      if (forward.kind === 'incremental') return forward.outcome;
      reason = forward.reason;
    } catch (err) {
      // E.g. a copy that is no DuckDB file any more, or one written by another DuckDB version.
      reason = `the previous copy could not be brought forward (${errorMessage(err)})`;
    }
  }
  await writeWholeCopy(connection, paths);
  laps.lap('full copy');
  return { mode: 'full', reason };
}

/**
 * Copies the previous copy to the temp file, attaches it as {@link COPY} and applies the change set since
 * its watermark. Returns the outcome, or why a full copy is needed instead (the temp copy then attached as
 * it is: {@link writeWholeCopy} drops it).
 */
async function applyToPreviousCopy(
  connection: DuckDBConnection,
  paths: PublishPaths,
  live: Watermark,
  previousParquet: PreviousParquet | undefined,
  laps: Laps,
): Promise<{ kind: 'incremental'; outcome: CopyOutcome } | { kind: 'full'; reason: string }> {
  // A reflink where the file system has them, else a kernel copy: no bytes pass through this process.
  copyFileSync(paths.database, paths.tmpDatabase, constants.COPYFILE_FICLONE);
  laps.lap('file copy');
  await connection.run(`ATTACH ${literal(paths.tmpDatabase)} AS ${ident(COPY)}`);
  const previous = await readWatermark(connection, COPY);
  const plan = await planChangeSet(
    connection,
    { watermark: previous, runs: qualified(COPY, 'sync_runs') },
    live,
  );
  laps.lap('change set');
  if (plan.kind === 'full') return plan;
  const sparse = await copyTooSparse(connection, COPY);
  if (sparse !== undefined) return { kind: 'full', reason: sparse };
  const changes = plan.changes;
  const same = previousParquet?.manifest.watermark.publishId === previous?.publishId;
  const parquet =
    previousParquet && same ? { previous: previousParquet, changed: new Map() as ChangedKeys } : undefined;
  const parts = parquetParts(await tableNames(connection, COPY));
  const keys = async (phase: 'before' | 'after') => {
    if (!parquet) return;
    const manifest = parquet.previous.manifest;
    await addChangedKeys(connection, parquet.changed, { copy: COPY, phase, parts, manifest, changes });
  };
  await keys('before');
  laps.lap('keys before');
  await applyChangeSet(connection, COPY, changes);
  laps.lap('apply');
  const difference = await copyDifference(connection, COPY);
  laps.lap('check');
  if (difference !== undefined) {
    return { kind: 'full', reason: `the change set did not bring the copy to the warehouse: ${difference}` };
  }
  await keys('after');
  laps.lap('keys after');
  return { kind: 'incremental', outcome: { mode: 'incremental', changes, ...(parquet ? { parquet } : {}) } };
}

/** Writes the temp copy whole (dropping an attached, half-applied one first). */
async function writeWholeCopy(connection: DuckDBConnection, paths: PublishPaths): Promise<void> {
  const attached = await connection.runAndReadAll(
    `SELECT count(*) AS n FROM duckdb_databases() WHERE database_name = $db`,
    { db: COPY },
  );
  if (Number(attached.getRowObjectsJS()[0]?.n) > 0) await connection.run(`DETACH ${ident(COPY)}`);
  for (const path of [paths.tmpDatabase, `${paths.tmpDatabase}.wal`]) removeQuietly(path);
  await connection.run(`ATTACH ${literal(paths.tmpDatabase)} AS ${ident(COPY)}`);
  await writeFullCopy(connection, await currentDatabase(connection), COPY);
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
  let reason =
    copy.mode === 'full' ? 'the copy was written whole' : 'the previous Parquet set holds another publish';
  if (copy.parquet) {
    const set = await writeParquetSet(connection, COPY, paths.tmpParquet, {
      parts,
      watermark,
      ...copy.parquet,
    });
    const difference = await parquetDifference(connection, COPY, parts, set.manifest);
    if (difference === undefined) return { mode: 'incremental', written: set.written, linked: set.linked };
    reason = `the change set did not bring the Parquet set to the copy: ${difference}`;
    removeQuietly(paths.tmpParquet);
  }
  const whole = await writeParquetSet(connection, COPY, paths.tmpParquet, { parts, watermark });
  return { mode: 'full', reason, written: whole.written, linked: whole.linked };
}

/** The Parquet version the `parquet` link points at, with its manifest, if it has one this version reads. */
function readPreviousParquet(dir: string): PreviousParquet | undefined {
  const version = currentVersion(join(dir, 'parquet'));
  if (version === undefined) return undefined;
  const manifest = readManifest(join(dir, version));
  return manifest ? { dir: join(dir, version), manifest } : undefined;
}

/** Durations (ms) of a publish's named steps, each from the end of the one before. */
class Laps {
  readonly ms: Record<string, number> = {};
  #last = Date.now();

  lap(name: string): void {
    const now = Date.now();
    this.ms[name] = (this.ms[name] ?? 0) + now - this.#last;
    this.#last = now;
  }
}
