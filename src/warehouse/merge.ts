import type { DuckDBConnection } from '@duckdb/node-api';
import { storeLineHashes } from './learnt-line-hashes.js';
import { lineHashColumn, lineHashValues } from './line-hash-column.js';
import { buildMergeBatch, emptyMergeBatch, type BatchCounts } from './merge-batch.js';
import { sizeBytes } from './memory-limit.js';
import { findUnseen } from './merge-seen.js';
import { stageSeenMarks } from './seen-marks.js';
import type { KnownLines } from '../normalize/known-lines.js';
import { copyOldRows, replaceRows } from './row-rewrite.js';
import { dropRunStaging, withTransaction } from './transaction.js';
import { BUSINESS, closeCurrentVersions } from './versions.js';

/** What a merge did, in records. */
export interface MergeResult {
  /** Valid records of the run: staged rows plus known (unchanged, unparsed) lines. */
  staged: number;
  /** Distinct reports the run saw (all current after its merge). */
  unique: number;
  /** Records superseded by another version of the same id within the run. */
  duplicates: number;
  inserted: number;
  updated: number;
  revived: number;
  unchanged: number;
  /** Reports rewritten from their CSV form to typed values, with no new version (counted apart from `unchanged`). */
  refined: number;
  /** Reports kept as stored because a copy of theirs was quarantined (merge-batch.ts); counted in `unchanged`. */
  held: number;
  /**
   * Reports kept as stored because the run's copy, from a cache, is older (merge-batch.ts): counted in
   * `unchanged`, except removed reports kept removed, which are not seen.
   */
  older: number;
}

/** The run a merge folds in. */
export interface MergeRun {
  runId: string;
  source: string;
  /** The merge time, used for `valid_from`/`valid_to`/`last_*_at`. */
  now: Date;
  /**
   * The run read a full export (NDJSON, CSV): it may have seen most of the warehouse, through known lines,
   * and its end is recorded once for all the reports it saw (merge-seen.ts). Otherwise (`recent`) every
   * report it saw is written.
   */
  fullExport: boolean;
  /** Staged reports per slice of the merge (`REPORTS_MERGE_SLICE_ROWS` resolved: {@link mergeSliceRows}). */
  sliceRows: number;
  /**
   * A cache served the export (an `Age` header, RFC 9111): it may be an older picture of the upstream than
   * the warehouse, so its copies older than the stored versions are kept back (merge-batch.ts `older`).
   */
  fromCache?: boolean | undefined;
}

/** Reports per slice at most: a slice's joins then need the same memory at 1M reports as at 40M. */
const MAX_SLICE_ROWS = 1_000_000;

/**
 * The staged reports a merge handles per slice: `configured`, or when 0, 2,000 per MiB of DuckDB's
 * memory limit left by the delete markers DuckDB holds for `report_rows` (`markerBytes`, delete-markers.ts),
 * up to 1M (docs/configuration.md, `REPORTS_MERGE_SLICE_ROWS`). Measured on a CSV run over a 4M-report
 * warehouse the NDJSON export filled, two merge threads: a slice of `merge_batch` fit with 400,000 staged
 * rows at 128MiB, 800,000 at 256MiB and 2M at 512MiB, and ran out of memory with 500,000 at 128MiB and 1M
 * at 256MiB (the stored rows' scans and TEMP tables weigh more than the rows' count alone: the 6,250 per
 * MiB used before failed there). About 4,000 per MiB left by the markers (36 MiB there) at the edge: 2,000
 * keeps half of that room. The markers grow with the warehouse (~300–350 MiB at 40M reports), the slices'
 * needs do not.
 */
export function mergeSliceRows(configured: number, memoryLimit: string, markerBytes = 0): number {
  if (configured > 0) return configured;
  const limit = sizeBytes(memoryLimit) ?? 256 * 2 ** 20;
  const byLimit = Math.floor(((limit - markerBytes) / 2 ** 20) * 2_000);
  return Math.max(10_000, Math.min(MAX_SLICE_ROWS, byLimit));
}

const COLUMNS = BUSINESS.split(', ');

/**
 * Merges the run's staging into `report_rows` and `report_versions` (docs/how-a-sync-works.md), after
 * {@link prepareMerge}. Call inside the transaction that also finishes the run, so readers never see half a
 * run. Its work follows what the run staged (parsed: new or changed lines), not the size of the warehouse:
 * 1. for a full export, `merge_unseen` (merge-seen.ts): the current reports it did not see; the reports
 *    seen through known lines (unchanged, most of a nightly run) are not written: `recordSeen` records the
 *    run once after the tombstones;
 * 2. each insert/update/revive closes the previous SCD2 version (`valid_to`) and opens a new one
 *    (`valid_from = now`); a changed row is replaced (row-rewrite.ts) and a new one inserted (no
 *    `ON CONFLICT`); a refine (an NDJSON reading of a report last written from CSV, same CSV projection)
 *    rewrites the row with its typed `extra` and no new version, as nothing changed upstream;
 * 3. a staged row with the content the warehouse holds is rewritten with the run's `last_seen_at` and
 *    `run_id` only when the run is not a full export's (`recent`) or the report was marked unseen.
 */
export async function mergeStaging(
  connection: DuckDBConnection,
  run: MergeRun,
  prepared: PreparedMerge,
): Promise<MergeResult> {
  const c = connection;
  const { stagedRows, knownLines, unseenLines, batch } = prepared;
  const seen = run.fullExport
    ? (await findUnseen(c, { ...run, knownLines, unseenLines, stagedRows })).seen
    : batch.unique;
  // The rows the run may rewrite: changed ones and, for a full export, the ones it did not see.
  const touched = run.fullExport
    ? "'update', 'revive', 'refine'"
    : "'update', 'revive', 'refine', 'unchanged'";
  await copyOldRows(
    c,
    `SELECT id FROM merge_batch WHERE change IN (${touched})${run.fullExport ? ' UNION ALL SELECT id FROM merge_unseen' : ''}`,
    run.fullExport,
  );
  await applyChanges(c, run, batch);
  const staged = stagedRows + knownLines;
  const { inserted, updated, revived, refined } = batch;
  return {
    staged,
    unique: seen,
    // A removed report kept removed (merge-batch.ts `olderRevives`) is not seen, yet its row is no duplicate.
    duplicates: staged - seen - batch.olderRevives,
    inserted,
    updated,
    revived,
    refined,
    unchanged: seen - inserted - updated - revived - refined,
    held: batch.held,
    older: batch.older,
  };
}

/** What {@link prepareMerge} found: the run's staged rows and known lines, the slices, `merge_batch`'s counts. */
export interface PreparedMerge {
  stagedRows: number;
  knownLines: number;
  /** Hashes of a marking known-line set not read, in `merge_unseen_lines` (seen-marks.ts); else undefined. */
  unseenLines: number | undefined;
  /** Slices of the staged ids (merge-batch.ts). */
  slices: number;
  batch: BatchCounts;
}

/**
 * The part of a merge that changes nothing the run's transaction must hold back, run before it opens:
 * `merge_batch` (a TEMP table: per staged id its winner and change), and, for a full export, the hash of
 * the line each staged report whose content the warehouse holds came in ({@link storeLineHashes}), in
 * slices each committed on its own. A line hash is a cache of "this line is that report as stored": it is
 * true as soon as the line was read, whether the run's merge commits or not, and no reader serves it. In
 * the run's transaction, the 10M hashes of a CSV run on a warehouse the NDJSON export filled had to be
 * committed at once, and the commit ran out of memory at 256MiB (4M at 100MiB, measured).
 *
 * `marks`: gives the run's known-line set; when it marked the lines read (`KnownLines.tracksSeen`), its known
 * lines are not in `staging_seen` but written from the marks first ({@link stageSeenMarks}). A getter, not
 * the set, so this frame holds no reference to it once `marksStaged` is called: the caller may then let it
 * go before the statements that need most memory.
 */
export async function prepareMerge(
  connection: DuckDBConnection,
  run: Pick<MergeRun, 'runId' | 'source' | 'fullExport' | 'sliceRows' | 'fromCache'>,
  marks?: () => KnownLines | undefined,
  marksStaged?: () => void,
): Promise<PreparedMerge> {
  const c = connection;
  // Left by an earlier run of this connection that was not a full export's: must not be read.
  await c.run('DROP TABLE IF EXISTS merge_removed');
  const counts = (
    await c.runAndReadAll(
      `SELECT (SELECT count(*) FROM staging_reports WHERE run_id = $run) AS staged_rows,
              (SELECT count(*) FROM staging_seen WHERE run_id = $run) AS known_lines,
              (SELECT count(*) FROM report_rows) AS stored`,
      { run: run.runId },
    )
  ).getRowObjectsJS()[0]!;
  const stagedRows = Number(counts.staged_rows);
  // Many staged rows against many stored ones (a CSV run on a warehouse the NDJSON export filled) need
  // slices; a first load joins against nothing, and its one aggregate spills (10M in one statement).
  const slices = Math.max(1, Math.ceil(Math.min(stagedRows, Number(counts.stored)) / run.sliceRows));
  // Counted above, before it adds the known lines of staged ids to `staging_seen`.
  const marked = marks ? await stageMarksOf(c, run, marks, slices) : undefined;
  marksStaged?.();
  const knownLines = marked?.knownLines ?? Number(counts.known_lines);
  const batch = stagedRows > 0 ? await buildMergeBatch(c, run, slices) : await emptyMergeBatch(c);
  if (batch.unchanged > 0 && run.fullExport) await storeLineHashes(c, run, slices);
  return { stagedRows, knownLines, unseenLines: marked?.unseenLines, slices, batch };
}

/** {@link stageSeenMarks} of the set `marks` gives, when it marks: in a frame of its own, gone once it returns. */
async function stageMarksOf(
  c: DuckDBConnection,
  run: Pick<MergeRun, 'runId' | 'source'>,
  marks: () => KnownLines | undefined,
  slices: number,
): Promise<Awaited<ReturnType<typeof stageSeenMarks>> | undefined> {
  const set = marks();
  return set?.tracksSeen ? stageSeenMarks(c, run, set, slices) : undefined;
}

/** Writes the staged winners of `merge_batch`: each statement only for a change kind the batch holds. */
async function applyChanges(c: DuckDBConnection, run: MergeRun, batch: BatchCounts): Promise<void> {
  const all = { run: run.runId, now: run.now.toISOString(), source: run.source };
  // Staged rows of the given changes: a semi-join whose build side is the narrow merge_batch, never the
  // wide staging (a plain join of two 1M-row inputs built on staging and spilled: measured).
  const picked = (changes: string) =>
    `(SELECT s.* FROM staging_reports s WHERE s.run_id = $run
       AND s.seq IN (SELECT seq FROM merge_batch WHERE change IN (${changes})))`;
  if (batch.updated + batch.revived > 0) {
    await closeCurrentVersions(c, `SELECT id FROM merge_batch WHERE change IN ('update', 'revive')`, all.now);
  }
  const own = lineHashColumn(run.source);
  const rewrites: string[] = [];
  if (batch.updated + batch.revived > 0) {
    rewrites.push(`SELECT o.* REPLACE (${COLUMNS.map((col) => `s.${col} AS ${col}`).join(', ')},
         s.content_hash AS content_hash, s.csv_hash AS csv_hash, ${lineHashValues(run.source, 's.line_hash')},
         $now::TIMESTAMPTZ AS last_seen_at, $now::TIMESTAMPTZ AS last_changed_at,
         CASE WHEN o.removed_at IS NULL THEN 'update' ELSE 'revive' END AS version_change, $run AS version_run_id,
         NULL::TIMESTAMPTZ AS removed_at, NULL::TIMESTAMPTZ AS unseen_since, $source AS source, $run AS run_id)
       FROM merge_old o JOIN ${picked(`'update', 'revive'`)} s ON s.id = o.id`);
  }
  if (batch.refined > 0) {
    // Same version, read with what CSV could not carry (types, `""` for an empty cell): known fields and
    // `extra` take the typed values; the CSV row's hash stays valid.
    rewrites.push(`SELECT o.* REPLACE (${COLUMNS.map((col) => `s.${col} AS ${col}`).join(', ')},
         s.content_hash AS content_hash, s.csv_hash AS csv_hash,
         s.line_hash AS ${own}, $now::TIMESTAMPTZ AS last_seen_at, NULL::TIMESTAMPTZ AS unseen_since,
         $source AS source, $run AS run_id)
       FROM merge_old o JOIN ${picked(`'refine'`)} s ON s.id = o.id`);
  }
  if (batch.unchanged > 0) {
    rewrites.push(`SELECT o.* REPLACE ($now::TIMESTAMPTZ AS last_seen_at, $run AS run_id,
         NULL::TIMESTAMPTZ AS unseen_since, coalesce(b.line_hash, o.${own}) AS ${own})
       FROM merge_old o JOIN merge_batch b ON b.id = o.id AND b.change = 'unchanged'
       ${run.fullExport ? 'WHERE o.unseen_since IS NOT NULL' : ''}`);
  }
  if (rewrites.length > 0) await replaceRows(c, rewrites.join(' UNION ALL '), all);
  if (batch.inserted > 0) {
    // The row is also the report's first version (the report_versions view): written once, not twice.
    await c.run(
      `INSERT INTO report_rows (id, ${BUSINESS}, content_hash, csv_hash, ${own}, first_seen_at, last_seen_at,
         last_changed_at, version_change, version_run_id, removed_at, source, run_id)
       SELECT s.id, ${COLUMNS.map((col) => `s.${col}`).join(', ')}, s.content_hash, s.csv_hash, s.line_hash,
         $now::TIMESTAMPTZ, $now::TIMESTAMPTZ, $now::TIMESTAMPTZ, 'insert', $run, NULL, $source, $run
       FROM ${picked(`'insert'`)} s`,
      all,
    );
  }
}

/** Drops the merge's TEMP tables (inside the finishing transaction, or after a failed one). */
export async function dropMergeTables(connection: DuckDBConnection): Promise<void> {
  for (const table of ['merge_batch', 'merge_unseen', 'merge_unseen_lines', 'merge_old', 'merge_removed']) {
    await connection.run(`DROP TABLE IF EXISTS ${table}`);
  }
}

/**
 * Removes the run's staging rows, known lines and checkpoints, and the merge's TEMP tables, in a transaction
 * of its own once the run is committed. Deleting a 4M-row CSV staging in the merge's transaction made its
 * commit run out of memory at 100MiB, where the same delete committed alone took 63 ms (measured). Rows a
 * process killed in between leaves are removed at the next start (stale-runs.ts, `closeStaleRuns`): they carry
 * a run that succeeded, which no other run reads.
 */
export async function clearStaging(connection: DuckDBConnection, runId: string): Promise<void> {
  await dropMergeTables(connection);
  await withTransaction(connection, (c) => dropRunStaging(c, runId));
}
