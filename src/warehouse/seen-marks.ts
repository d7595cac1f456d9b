import type { DuckDBConnection } from '@duckdb/node-api';
import type { KnownLines } from '../normalize/known-lines.js';
import { lineHashColumn } from './line-hash-column.js';
import { inSlice, type Slice } from './merge-batch.js';

/** What {@link stageSeenMarks} found: the run's known lines read, and the set's hashes not read. */
export interface SeenMarks {
  /** Known lines read (records: a line that repeats counts each time). */
  knownLines: number;
  /** Hashes of the set no line was read with, now in `merge_unseen_lines`. */
  unseenLines: number;
}

/**
 * For a run whose known-line set marked the lines read (`KnownLines.tracksSeen`: an NDJSON export, read
 * whole) instead of staging one `staging_seen` row per known line: writes what the merge needs from the
 * marks, before it (outside the run's transaction; TEMP tables and staging rows of this run only):
 * 1. the TEMP table `merge_unseen_lines`: the hashes no line was read with. As the set holds the current
 *    reports' hashes (the run holds the one writer since it loaded them), the current reports a full
 *    export's known lines did not account for are those with one of these hashes or none
 *    (merge-seen.ts, `findUnseen`): a semi-join on the few changed and removed ones (0.45 s at 10M),
 *    where an anti-join of every current report against ~N staged known lines made a 10M-report nightly
 *    merge 8–9 s longer, and staging those lines (~16 bytes each) its read ~18 s longer (measured);
 * 2. a `staging_seen` row (seq: the line it was read at) for each known line of a report the run also
 *    staged: an id repeated in the export, whose versions the merge weighs by `updatedAt`, then line
 *    (merge-batch.ts). Only those ids are read back, so this follows the run's staged rows; in `slices`
 *    of them (by a hash of the id, as `buildMergeBatch`), so each semi-join fits DuckDB's memory limit.
 *
 * @returns the known lines read and the hashes not read
 * @throws DuckDB errors
 */
export async function stageSeenMarks(
  c: DuckDBConnection,
  run: { runId: string; source: string },
  marks: KnownLines,
  slices: number,
): Promise<SeenMarks> {
  await c.run('CREATE OR REPLACE TEMP TABLE merge_unseen_lines (line_hash BIGINT)');
  let unseenLines = 0;
  const unseen = await c.createAppender('merge_unseen_lines', 'main', 'temp');
  try {
    marks.unseen((hash) => {
      unseen.appendBigInt(hash);
      unseen.endRow();
      unseenLines++;
    });
    unseen.flushSync();
  } finally {
    unseen.closeSync();
  }
  const read: Array<{ line: number; hash: bigint }> = [];
  for (let slice = 0; slice < slices; slice++) {
    await readStagedIdsHashes(c, { ...run, slice, slices }, (hash) => {
      const line = marks.lineOf(hash);
      if (line > 0) read.push({ line, hash });
    });
  }
  if (read.length > 0) {
    const seen = await c.createAppender('staging_seen');
    try {
      for (const { line, hash } of read) {
        seen.appendVarchar(run.runId);
        seen.appendBigInt(BigInt(line));
        seen.appendBigInt(hash);
        seen.endRow();
      }
      seen.flushSync();
    } finally {
      seen.closeSync();
    }
  }
  return { knownLines: marks.knownRead, unseenLines };
}

/** Visits the line hashes of the current reports whose id the run staged, in one slice of those ids. */
async function readStagedIdsHashes(
  c: DuckDBConnection,
  run: { runId: string; source: string } & Slice,
  visit: (hash: bigint) => void,
): Promise<void> {
  const column = lineHashColumn(run.source);
  const result = await c.run(
    `SELECT ${column} AS h FROM report_rows
     WHERE removed_at IS NULL AND ${column} IS NOT NULL AND ${inSlice('id', run)}
       AND id IN (SELECT id FROM staging_reports WHERE run_id = $run AND ${inSlice('id', run)})`,
    { run: run.runId },
  );
  for (;;) {
    const chunk = await result.fetchChunk();
    // Read once: `rowCount` calls into the binding each time.
    const rows = chunk?.rowCount ?? 0;
    if (!chunk || rows === 0) break;
    const hashes = chunk.getColumnVector(0);
    for (let i = 0; i < rows; i++) visit(hashes.getItem(i) as bigint);
  }
}
