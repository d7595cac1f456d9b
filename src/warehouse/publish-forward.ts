import { constants, existsSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Laps } from '../util/laps.js';
import { errorMessage } from '../util/errors.js';
import { planChangeSet, type ChangeSet } from './change-set.js';
import { addChangedKeys } from './parquet-changes.js';
import { parquetParts, type ParquetPart } from './parquet-layout.js';
import { applyChangeSet, copyDifference, copyTooSparse, writeFullCopy } from './publish-copy.js';
import { removeQuietly } from './publish-files.js';
import type { ChangedKeys, PreviousParquet } from './publish-parquet.js';
import { currentDatabase, ident, literal, qualified, tableNames } from './published-tables.js';
import { readWatermark, type Watermark } from './watermark.js';

// The DuckDB copy's half of a publish (publish.ts): the temp copy brought to the live warehouse's state.

/** Where a publish writes: the published folder, the copy, and the temp paths it renames into place. */
export interface PublishPaths {
  dir: string;
  database: string;
  tmpDatabase: string;
  tmpParquet: string;
  version: string;
}

/** The alias the temp copy is attached as, on the publishing connection. */
export const COPY = `publish_${process.pid}`;

/** How the temp copy (attached as {@link COPY}) was made, and for the Parquet set what it builds on. */
export interface CopyOutcome {
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
export async function bringCopyForward(
  connection: DuckDBConnection,
  paths: PublishPaths,
  live: Watermark,
  previousParquet: PreviousParquet | undefined,
  options: { full?: boolean },
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

/** The previous copy attached read-only while the temp copy is written: the planning reads it in place. */
const PREVIOUS = `published_${process.pid}`;

/** A change set planned on the previous copy, or why a full copy is needed instead. */
type Plan = { kind: 'full'; reason: string } | { kind: 'ready'; changes: ChangeSet; parquet?: ParquetBase };

/** The previous Parquet version a change set builds on, the keys it touched, and the parts they are of. */
interface ParquetBase {
  previous: PreviousParquet;
  changed: ChangedKeys;
  parts: ParquetPart[];
}

/**
 * Copies the previous copy to the temp file, attaches it as {@link COPY} and applies the change set since
 * its watermark. Returns the outcome, or why a full copy is needed instead (the temp copy then attached as
 * it is: {@link writeWholeCopy} drops it).
 *
 * The file copy is a publish's slowest step when little changed (~1 s for the 480 MB copy of 4M reports on
 * this machine's ~500 MB/s of buffered writes; a reflink where the file system has them). It runs on
 * libuv's pool while the change set is planned on the previous copy itself, attached read-only: the same
 * bytes, which it only reads. When that copy cannot be attached read-only (a WAL beside it, another
 * process writing it), the plan is made on the temp copy once it is written.
 */
async function applyToPreviousCopy(
  connection: DuckDBConnection,
  paths: PublishPaths,
  live: Watermark,
  previousParquet: PreviousParquet | undefined,
  laps: Laps,
): Promise<{ kind: 'incremental'; outcome: CopyOutcome } | { kind: 'full'; reason: string }> {
  // Both settle before either's failure is thrown: the temp file is not removed while it is written.
  const [copied, planned] = await Promise.allSettled([
    copyFile(paths.database, paths.tmpDatabase, constants.COPYFILE_FICLONE),
    planInPlace(connection, paths, live, previousParquet),
  ]);
  if (copied.status === 'rejected') throw copied.reason;
  if (planned.status === 'rejected') throw planned.reason;
  let plan = planned.value;
  laps.lap(plan ? 'file copy, change set' : 'file copy');
  if (plan?.kind === 'full') return plan;
  await connection.run(`ATTACH ${literal(paths.tmpDatabase)} AS ${ident(COPY)}`);
  if (!plan) {
    plan = await planOn(connection, COPY, live, previousParquet);
    laps.lap('change set');
  }
  if (plan.kind === 'full') return plan;
  const { changes, parquet } = plan;
  await applyChangeSet(connection, COPY, changes);
  laps.lap('apply');
  const difference = await copyDifference(connection, COPY);
  laps.lap('check');
  if (difference !== undefined) {
    return { kind: 'full', reason: `the change set did not bring the copy to the warehouse: ${difference}` };
  }
  if (parquet) await addKeys(connection, parquet, changes, COPY, 'after');
  laps.lap('keys after');
  const base = parquet ? { parquet: { previous: parquet.previous, changed: parquet.changed } } : {};
  return { kind: 'incremental', outcome: { mode: 'incremental', changes, ...base } };
}

/**
 * {@link planOn} the published copy attached read-only as {@link PREVIOUS}, detached afterwards. Undefined
 * when it cannot be read in place: a WAL beside it (the temp copy would not hold what it replays), or an
 * `ATTACH` refused (e.g. another process holds it read-write).
 */
async function planInPlace(
  connection: DuckDBConnection,
  paths: PublishPaths,
  live: Watermark,
  previousParquet: PreviousParquet | undefined,
): Promise<Plan | undefined> {
  if (existsSync(`${paths.database}.wal`)) return undefined;
  try {
    await connection.run(`ATTACH ${literal(paths.database)} AS ${ident(PREVIOUS)} (READ_ONLY)`);
  } catch {
    return undefined;
  }
  try {
    return await planOn(connection, PREVIOUS, live, previousParquet);
  } finally {
    await connection.run(`DETACH ${ident(PREVIOUS)}`);
  }
}

/**
 * Plans the change set from the previous copy attached as `alias` to the live warehouse, and, when the
 * previous Parquet version holds the same publish, the file keys its changed rows had there (`before`).
 * Temp tables only: nothing refers to `alias` afterwards.
 */
async function planOn(
  connection: DuckDBConnection,
  alias: string,
  live: Watermark,
  previousParquet: PreviousParquet | undefined,
): Promise<Plan> {
  const previous = await readWatermark(connection, alias);
  const plan = await planChangeSet(
    connection,
    { watermark: previous, runs: qualified(alias, 'sync_runs') },
    live,
  );
  if (plan.kind === 'full') return plan;
  const sparse = await copyTooSparse(connection, alias);
  if (sparse !== undefined) return { kind: 'full', reason: sparse };
  const changes = plan.changes;
  if (!previousParquet || previousParquet.manifest.watermark.publishId !== previous?.publishId)
    return { kind: 'ready', changes };
  const parquet = {
    previous: previousParquet,
    changed: new Map() as ChangedKeys,
    parts: parquetParts(await tableNames(connection, alias)),
  };
  await addKeys(connection, parquet, changes, alias, 'before');
  return { kind: 'ready', changes, parquet };
}

/** {@link addChangedKeys} of one phase, for the parts of `parquet`'s manifest. */
async function addKeys(
  connection: DuckDBConnection,
  parquet: ParquetBase,
  changes: ChangeSet,
  copy: string,
  phase: 'before' | 'after',
): Promise<void> {
  const { parts, previous, changed } = parquet;
  await addChangedKeys(connection, changed, { copy, phase, parts, manifest: previous.manifest, changes });
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
