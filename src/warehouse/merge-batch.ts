import type { DuckDBConnection } from '@duckdb/node-api';
import { failpoint } from '../util/failpoint.js';
import { lineHashColumn } from './line-hash-column.js';

// seq * 2 + known fits below this (seq < 2^53: NDJSON line numbers, CSV page × 2^29 + row); the latest
// updated_at (µs, < 2^58 up to year 9999) is above it, and the whole key stays below HUGEINT's 2^127.
const KEY_SPLIT = '18014398509481984'; // 2^54
// Sources whose records carry unknown fields as text only (CSV cells): compared by their CSV projection.
const LOSSY_SOURCES = ['csv'];
const LOSSY_SQL = LOSSY_SOURCES.map((s) => `'${s}'`).join(', ');

/** How many ids of `merge_batch` each change kind holds. */
export interface BatchCounts {
  /** Distinct ids the run staged rows for. */
  unique: number;
  inserted: number;
  updated: number;
  revived: number;
  refined: number;
  /** Staged winners whose content the warehouse holds already. */
  unchanged: number;
  /** Ids whose winner is a known line (the current report's), not one of the staged rows. */
  known: number;
  /**
   * Current reports kept as stored (`held`): the run quarantined a copy of the id, and its valid winner is
   * not newer than the stored report (`updated_at`), so the quarantined copy may be the latest.
   */
  held: number;
  /**
   * Reports kept as stored (`older`) because the run's copy, from an export a cache served (an `Age`
   * header), is older than the stored version (`updated_at` before the stored one's). In a full export that
   * holds such a copy, every revive is kept back too (counted here): the export is an older picture of the
   * upstream than the warehouse (a stale cached copy), and a report it still holds may be gone since. An
   * export no cache served is the upstream's word: its copies are taken, older or not.
   */
  older: number;
  /** Of {@link older}, the removed reports kept removed (their staged rows are not seen: no duplicates). */
  olderRevives: number;
}

/** A slice of the staged ids: those whose `hash(id)` is `slice` modulo `slices` (all of them for 1 slice). */
export interface Slice {
  slice: number;
  slices: number;
}

/** The SQL condition that `column` (an id) is in `s`. */
export function inSlice(column: string, s: Slice): string {
  return s.slices === 1 ? 'true' : `hash(${column}) % ${s.slices} = ${s.slice}`;
}

/**
 * Builds the TEMP table `merge_batch`: one row per id the run staged (`staging_reports`), its winner and
 * what it does, slice by slice (`slices`, by a hash of the id: a report's rows are all in one slice, so the
 * result does not depend on the count). Memory and time follow the staged rows, not the warehouse: the
 * run's known lines only take part for those ids (a known line of an id the run also staged is a duplicate
 * in the export and competes), and the stored rows of those ids are copied once into `merge_existing`
 * first, so every join is built on the run's own rows. Each step is a statement of its own: in one
 * statement, 400,000 staged CSV rows of a warehouse the NDJSON export filled ran out of memory at 64MiB;
 * apart, each spilled what did not fit and the whole took 2.4 s (measured).
 *
 * Per id the latest `updated_at` wins, ties go to the last seen (`seq`) — `ON CONFLICT` alone would silently
 * keep the first of two duplicates (measured). A grouped `arg_max` over one HUGEINT key (updated_at µs, seq,
 * known) instead of a window: a narrow hash aggregate, no sort; it spills. A winner is `known`, or: an
 * `insert` (new id), a `revive` (tombstoned id), `unchanged` (same content hash; a CSV row: same CSV
 * projection, schema/csv-projection.ts), a `refine` (an NDJSON row whose CSV projection equals that of a
 * report last written from CSV) or an `update`. `row_id` is the stored row's `rowid` (NULL for a known or
 * new id): the stored line hashes are written by rowid range (learnt-line-hashes.ts).
 *
 * A winner that would update or refine a current report is `held` instead (the report stays as stored, and
 * counts as seen) when the run quarantined a copy of the same id (`rejected_records.record_id`) and the
 * winner's `updated_at` is not after the stored one's: "latest `updatedAt` wins" cannot be told for a copy
 * that did not validate, and it must not move the report back to an older state. An insert or revive goes
 * ahead: the valid copy is better than no report. From an export a cache served (`fromCache`), a winner
 * older than the current report it would update is `older` (see {@link BatchCounts.older}), by a second at least (an export that writes whole seconds,
 * truncated or rounded, is no older than one that writes milliseconds), when the stored version was read as this run reads
 * (`sync_runs.reading`): a changed time zone may move a timestamp back, and the correction is taken; nor
 * against a stored `updated_at` in the future, which a correction must be able to replace, nor for a copy
 * whose `updated_at` is before its `created_at` (both impossible values, flagged and loaded).
 */
export async function buildMergeBatch(
  c: DuckDBConnection,
  run: { runId: string; source: string; fullExport: boolean; fromCache?: boolean | undefined },
  slices: number,
): Promise<BatchCounts> {
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_batch (id VARCHAR, seq BIGINT, line_hash BIGINT, change VARCHAR, row_id BIGINT)`,
  );
  for (let slice = 0; slice < slices; slice++) {
    await batchSlice(c, { ...run, fromCache: run.fromCache === true }, { slice, slices });
    // A test kills the process here: slices are steps of the one merge transaction, never committed alone.
    if (slice === 0 && slices > 1) await failpoint('merge-slice');
  }
  await c.run('DROP TABLE IF EXISTS merge_existing; DROP TABLE IF EXISTS merge_picked');
  if (run.fullExport && run.fromCache === true) {
    await c.run(
      `UPDATE merge_batch SET change = 'older_revive'
       WHERE change = 'revive' AND EXISTS (SELECT 1 FROM merge_batch WHERE change = 'older')`,
    );
  }
  const row = (
    await c.runAndReadAll(
      `SELECT count(*) AS "unique",
         count(*) FILTER (WHERE change = 'insert') AS inserted,
         count(*) FILTER (WHERE change = 'update') AS updated,
         count(*) FILTER (WHERE change = 'revive') AS revived,
         count(*) FILTER (WHERE change = 'refine') AS refined,
         count(*) FILTER (WHERE change = 'unchanged') AS unchanged,
         count(*) FILTER (WHERE change = 'known') AS known,
         count(*) FILTER (WHERE change = 'held') AS held,
         count(*) FILTER (WHERE change IN ('older', 'older_revive')) AS older,
         count(*) FILTER (WHERE change = 'older_revive') AS older_revives
       FROM merge_batch`,
    )
  ).getRowObjectsJS()[0]!;
  const counts = Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
  return { ...counts, olderRevives: counts.older_revives } as unknown as BatchCounts;
}

/** Appends one slice's winners to `merge_batch` (see {@link buildMergeBatch}). */
async function batchSlice(
  c: DuckDBConnection,
  run: { runId: string; source: string; fromCache: boolean },
  s: Slice,
): Promise<void> {
  const params = { run: run.runId };
  const staged = `staging_reports WHERE run_id = $run AND ${inSlice('id', s)}`;
  const lossy = LOSSY_SOURCES.includes(run.source) ? 'true' : 'false';
  await existingRows(c, run, staged, s);
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_picked AS
     SELECT id, sk // 2 AS seq, sk % 2 = 1 AS known FROM (
       -- arg_max, not max then decoding the key: HUGEINT modulo cost ~0.75 s per 1M ids
       SELECT id, arg_max(seq * 2 + known, epoch_us(updated_at)::HUGEINT * ${KEY_SPLIT} + seq * 2 + known) AS sk
       FROM (
         SELECT id, updated_at, seq, 0 AS known FROM ${staged}
         UNION ALL
         SELECT e.id, e.updated_at, k.seq, 1 AS known
         FROM staging_seen k JOIN merge_existing e ON e.line_hash = k.line_hash AND e.removed_at IS NULL
         WHERE k.run_id = $run
       ) GROUP BY id)`,
    params,
  );
  await c.run(
    `INSERT INTO merge_batch
     SELECT id, seq, NULL::BIGINT AS line_hash, 'known' AS change, NULL::BIGINT AS row_id FROM merge_picked WHERE known
     UNION ALL
     -- seq is shared by staged rows and known lines, so a staged winner finds its own row
     SELECT p.id, p.seq, s.line_hash,
       CASE WHEN e.id IS NULL THEN 'insert'
            WHEN e.removed_at IS NOT NULL THEN 'revive'
            WHEN e.content_hash = s.content_hash THEN 'unchanged'
            -- CSV cells are text: the same report read from CSV differs from its NDJSON reading only in
            -- representation when their CSV projections agree (schema/csv-projection.ts).
            WHEN ${lossy} AND coalesce(e.csv_hash, e.content_hash) = s.csv_hash THEN 'unchanged'
            WHEN q.id IS NOT NULL AND coalesce(s.updated_at, '-infinity'::TIMESTAMPTZ)
              <= coalesce(e.updated_at, '-infinity'::TIMESTAMPTZ) THEN 'held'
            WHEN ${run.fromCache} AND e.same_reading
              AND s.updated_at <= e.updated_at - INTERVAL 1 SECOND
              AND e.updated_at <= now()
              AND s.updated_at >= s.created_at THEN 'older'
            WHEN NOT ${lossy} AND e.source IN (${LOSSY_SQL}) AND coalesce(e.csv_hash, e.content_hash) = s.csv_hash
              THEN 'refine'
            ELSE 'update' END AS change,
       e.row_id
     FROM (SELECT * FROM merge_picked WHERE NOT known) p
     LEFT JOIN (SELECT seq, line_hash, content_hash, coalesce(csv_hash, content_hash) AS csv_hash, updated_at,
                  created_at
                FROM ${staged}) s ON s.seq = p.seq
     LEFT JOIN merge_existing e ON e.id = p.id
     LEFT JOIN (SELECT DISTINCT record_id AS id FROM rejected_records
                WHERE run_id = $run AND record_id IS NOT NULL) q ON q.id = p.id`,
    params,
  );
}

/**
 * `merge_existing`: the stored rows of one slice's staged ids, with the line hash of the run's source and,
 * for an export a cache served, whether the stored version was read as this run reads (`same_reading`).
 */
async function existingRows(
  c: DuckDBConnection,
  run: { runId: string; source: string; fromCache: boolean },
  staged: string,
  s: Slice,
): Promise<void> {
  const params = { run: run.runId };
  // How the stored version was read matters only to the `older` rule, so only an export a cache served
  // joins the run log for it.
  const sameReading = run.fromCache
    ? 'coalesce(w.reading = (SELECT reading FROM sync_runs WHERE run_id = $run), false)'
    : 'false';
  const runLog = run.fromCache ? 'LEFT JOIN sync_runs w ON w.run_id = r.version_run_id' : '';
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_existing AS
     SELECT r.id, r.removed_at, r.updated_at, r.content_hash, r.csv_hash, r.source,
       r.${lineHashColumn(run.source)} AS line_hash, r.rowid AS row_id, ${sameReading} AS same_reading
     FROM report_rows r ${runLog}
     WHERE ${inSlice('r.id', s)} AND r.id IN (SELECT id FROM ${staged})`,
    params,
  );
}

/** An empty `merge_batch` (a run that staged no rows), so later statements can read it all the same. */
export async function emptyMergeBatch(c: DuckDBConnection): Promise<BatchCounts> {
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_batch (id VARCHAR, seq BIGINT, line_hash BIGINT, change VARCHAR, row_id BIGINT)`,
  );
  return {
    unique: 0,
    inserted: 0,
    updated: 0,
    revived: 0,
    refined: 0,
    unchanged: 0,
    known: 0,
    held: 0,
    older: 0,
    olderRevives: 0,
  };
}
