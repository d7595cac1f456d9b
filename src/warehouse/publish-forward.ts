import { constants, copyFileSync, existsSync } from 'node:fs';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Laps } from '../util/laps.js';
import { errorMessage } from '../util/errors.js';
import { planChangeSet, type ChangeSet } from './change-set.js';
import { addChangedKeys } from './parquet-changes.js';
import { parquetParts } from './parquet-layout.js';
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
