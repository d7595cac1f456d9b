import type { DuckDBConnection } from '@duckdb/node-api';
import { refine } from './merge-refine.js';
import { dropRunStaging } from './transaction.js';
import { BUSINESS, closeCurrentVersions } from './versions.js';

/** What a merge did, in records. */
export interface MergeResult {
  /** Valid records of the run: staged rows plus known (unchanged, unparsed) lines. */
  staged: number;
  /** Distinct ids after dedupe. */
  unique: number;
  /** Records superseded by another version of the same id within the run. */
  duplicates: number;
  inserted: number;
  updated: number;
  revived: number;
  unchanged: number;
  /** Reports rewritten from their CSV form to typed values, with no new version (counted apart from `unchanged`). */
  refined: number;
}

const COLUMNS = BUSINESS.split(', ');
// seq * 2 + known fits below this (seq < 2^53: NDJSON line numbers, CSV page × 2^29 + row); the latest
// updated_at (µs, < 2^58 up to year 9999) is above it, and the whole key stays below HUGEINT's 2^127.
const KEY_SPLIT = '18014398509481984'; // 2^54
// Sources whose records carry unknown fields as text only (CSV cells): compared by their CSV projection.
const LOSSY_SOURCES = ['csv'];
const LOSSY_SQL = LOSSY_SOURCES.map((s) => `'${s}'`).join(', ');

/**
 * Merges the run's staging into `reports` and `report_versions` (DESIGN.md §6). Call inside the
 * transaction that also finishes the run, so readers never see half a run:
 * 0. a run of known lines only that saw every current report (a no-change re-sync) only touches
 *    `last_seen_at` and `run_id` ({@link everyCurrentSeenUnchanged}); otherwise:
 * 1. `merge_batch` (a temp table, one row per id the run saw — tombstones read it): the run's records are
 *    its staged rows (`staging_reports`) and its known lines (`staging_seen`, resolved to the current report
 *    through `reports.line_hash`, see sync/known-lines.ts); per id the latest `updated_at` wins, ties go to
 *    the last seen (`seq`) — `ON CONFLICT` alone would silently keep the first of two duplicates (measured).
 *    A grouped `arg_max` over one HUGEINT key (updated_at µs, seq, known) instead of a window: a narrow hash
 *    aggregate, no sort;
 * 2. a winning staged row is an insert (new id), a revive (tombstoned id), an update (content hash differs)
 *    or unchanged; each insert/update/revive closes the previous SCD2 version (`valid_to`) and opens a new
 *    one (`valid_from = now`). Updates are plain `UPDATE`s and inserts plain `INSERT`s (no `ON CONFLICT`);
 * 3. unchanged reports (a known line, or a staged row with the same content hash) only get `last_seen_at`,
 *    `run_id` and the hash of the line they were seen in touched.
 *    A CSV row (cells are text) is unchanged when its CSV projection hash (`csv_hash`,
 *    schema/csv-projection.ts; NULL in staging and `reports` when it equals `content_hash`, as it does for
 *    most reports) equals the stored one: it only differs from the NDJSON reading in representation. An
 *    NDJSON row whose projection equals that of a report last written from CSV is a `refine`: the typed
 *    `extra` replaces the text one in place (current version and row), no version is made.
 *
 * @param now the merge time, used for `valid_from`/`valid_to`/`last_*_at`
 */
export async function mergeStaging(
  connection: DuckDBConnection,
  run: { runId: string; source: string; now: Date },
): Promise<MergeResult> {
  const c = connection;
  const staging = 'staging_reports';
  const seen = 'staging_seen';
  const runOnly = { run: run.runId };
  const lossy = LOSSY_SOURCES.includes(run.source) ? 'true' : 'false';
  const all = { run: run.runId, now: run.now.toISOString(), source: run.source };
  const unchangedRun = await everyCurrentSeenUnchanged(c, run);
  if (unchangedRun) return unchangedRun;
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_batch AS
     WITH arrived AS (
       SELECT id, updated_at, seq, 0 AS known FROM ${staging} WHERE run_id = $run
       UNION ALL
       SELECT r.id, r.updated_at, s.seq, 1 AS known
       FROM ${seen} s JOIN reports r ON r.line_hash = s.line_hash AND r.removed_at IS NULL
       WHERE s.run_id = $run
     ), winners AS (
       -- arg_max, not max then decoding the key: HUGEINT modulo cost ~0.75 s per 1M ids
       SELECT id, arg_max(seq * 2 + known, epoch_us(updated_at)::HUGEINT * ${KEY_SPLIT} + seq * 2 + known) AS sk
       FROM arrived GROUP BY id
     ), picked AS (
       SELECT id, sk // 2 AS seq, sk % 2 = 1 AS known FROM winners
     )
     -- A known winner is unchanged (its line is the current report's): no join. A no-change re-sync is all
     -- known lines, and joining its 1M winners back to reports cost ~0.1–0.2 s.
     SELECT id, seq, NULL::BIGINT AS line_hash, 'unchanged' AS change FROM picked WHERE known
     UNION ALL
     -- seq is shared by staged rows and known lines, so a staged winner finds its own row
     SELECT p.id, p.seq, s.line_hash,
       CASE WHEN r.id IS NULL THEN 'insert'
            WHEN r.removed_at IS NOT NULL THEN 'revive'
            WHEN r.content_hash = s.content_hash THEN 'unchanged'
            -- CSV cells are text: the same report read from CSV differs from its NDJSON reading only in
            -- representation when their CSV projections agree (schema/csv-projection.ts).
            WHEN ${lossy} AND coalesce(r.csv_hash, r.content_hash) = s.csv_hash THEN 'unchanged'
            WHEN NOT ${lossy} AND r.source IN (${LOSSY_SQL}) AND coalesce(r.csv_hash, r.content_hash) = s.csv_hash
              THEN 'refine'
            ELSE 'update' END AS change
     FROM (SELECT * FROM picked WHERE NOT known) p
     LEFT JOIN (SELECT seq, line_hash, content_hash, coalesce(csv_hash, content_hash) AS csv_hash
                FROM ${staging} WHERE run_id = $run) s ON s.seq = p.seq
     LEFT JOIN reports r ON r.id = p.id`,
    runOnly,
  );
  const counts = (
    await c.runAndReadAll(
      `SELECT
         (SELECT count(*) FROM ${staging} WHERE run_id = $run) AS staged_rows,
         (SELECT count(*) FROM ${seen} WHERE run_id = $run) AS known_lines,
         count(*) AS "unique",
         count(*) FILTER (WHERE change = 'insert') AS inserted,
         count(*) FILTER (WHERE change = 'update') AS updated,
         count(*) FILTER (WHERE change = 'revive') AS revived,
         count(*) FILTER (WHERE change = 'refine') AS refined,
         count(*) FILTER (WHERE change = 'unchanged') AS unchanged
       FROM merge_batch`,
      runOnly,
    )
  ).getRowObjectsJS()[0]!;
  // Staged rows of the given changes: a semi-join whose build side is the narrow merge_batch, never the
  // wide staging (a plain join of two 1M-row inputs built on staging and spilled: measured).
  const picked = (changes: string) =>
    `FROM ${staging} s WHERE s.run_id = $run
       AND s.seq IN (SELECT seq FROM merge_batch WHERE change IN (${changes}))`;
  const business = COLUMNS.map((col) => `s.${col}`).join(', ');
  if (Number(counts.unchanged) > 0) {
    await c.run(
      `UPDATE reports SET last_seen_at = $now::TIMESTAMPTZ, run_id = $run,
         line_hash = coalesce(b.line_hash, reports.line_hash)
       FROM merge_batch b
       WHERE reports.id = b.id AND b.change = 'unchanged'`,
      { run: run.runId, now: all.now },
    );
  }
  if (Number(counts.refined) > 0) await refine(c, picked(`'refine'`), all);
  if (Number(counts.updated) + Number(counts.revived) > 0) {
    await closeCurrentVersions(c, `SELECT id FROM merge_batch WHERE change IN ('update', 'revive')`, all.now);
    await c.run(
      `UPDATE reports SET ${COLUMNS.map((col) => `${col} = u.${col}`).join(', ')},
         content_hash = u.content_hash, csv_hash = u.csv_hash, line_hash = u.line_hash,
         last_seen_at = $now::TIMESTAMPTZ, last_changed_at = $now::TIMESTAMPTZ,
         version_change = CASE WHEN reports.removed_at IS NULL THEN 'update' ELSE 'revive' END,
         version_run_id = $run, removed_at = NULL, source = $source, run_id = $run
       FROM (SELECT s.* ${picked(`'update', 'revive'`)}) AS u
       WHERE reports.id = u.id`,
      all,
    );
  }
  if (Number(counts.inserted) > 0) {
    // The row is also the report's first version (the report_versions view): written once, not twice.
    await c.run(
      `INSERT INTO reports (id, ${BUSINESS}, content_hash, csv_hash, line_hash, first_seen_at, last_seen_at,
         last_changed_at, version_change, version_run_id, removed_at, source, run_id)
       SELECT s.id, ${business}, s.content_hash, s.csv_hash, s.line_hash,
         $now::TIMESTAMPTZ, $now::TIMESTAMPTZ, $now::TIMESTAMPTZ, 'insert', $run, NULL, $source, $run
       ${picked(`'insert'`)}`,
      all,
    );
  }
  const staged = Number(counts.staged_rows) + Number(counts.known_lines);
  const unique = Number(counts.unique);
  const inserted = Number(counts.inserted);
  const updated = Number(counts.updated);
  const revived = Number(counts.revived);
  const refined = Number(counts.refined);
  return {
    staged,
    unique,
    duplicates: staged - unique,
    inserted,
    updated,
    revived,
    refined,
    unchanged: unique - inserted - updated - revived - refined,
  };
}

/**
 * The merge of a run that staged no rows and saw, through its known lines, every current report (a no-change
 * re-sync): each report only gets `last_seen_at` and `run_id`, with no `merge_batch` built (~0.3 s per 1M
 * reports, most of such a merge). Null when the run is not one, and the full merge runs.
 *
 * A known line's hash is that of a current report's line (loaded at the run's start; one process writes the
 * warehouse), and one hash names one report (the line holds its id). So when as many current reports hold
 * one of the run's hashes as there are current reports, every one was seen; hashes of a resumed run that no
 * longer match (a report changed meanwhile) match nothing, as in the full merge.
 */
async function everyCurrentSeenUnchanged(
  c: DuckDBConnection,
  run: { runId: string; now: Date },
): Promise<MergeResult | null> {
  const params = { run: run.runId };
  const read = async (sql: string) =>
    (await c.runAndReadAll(sql, params)).getRowObjectsJS()[0] as Record<string, bigint>;
  const counts = await read(
    `SELECT (SELECT count(*) FROM staging_reports WHERE run_id = $run) AS staged_rows,
            (SELECT count(*) FROM staging_seen WHERE run_id = $run) AS known_lines,
            (SELECT count(*) FROM reports WHERE removed_at IS NULL) AS "current"`,
  );
  const knownLines = Number(counts.known_lines);
  const current = Number(counts.current);
  if (Number(counts.staged_rows) > 0 || current === 0 || knownLines < current) return null;
  const seen = await read(
    `SELECT count(*) AS n FROM reports
     WHERE removed_at IS NULL AND line_hash IN (SELECT line_hash FROM staging_seen WHERE run_id = $run)`,
  );
  if (Number(seen.n) !== current) return null;
  // No merge_batch for this run: a table left by an earlier run of this connection must not be read.
  await c.run('DROP TABLE IF EXISTS merge_batch');
  await c.run(`UPDATE reports SET last_seen_at = $now::TIMESTAMPTZ, run_id = $run WHERE removed_at IS NULL`, {
    run: run.runId,
    now: run.now.toISOString(),
  });
  return {
    staged: knownLines,
    unique: current,
    duplicates: knownLines - current,
    inserted: 0,
    updated: 0,
    revived: 0,
    unchanged: current,
    refined: 0,
  };
}

/** Removes the run's staging rows, known lines and checkpoints, and `merge_batch` (inside the finishing transaction). */
export async function clearStaging(connection: DuckDBConnection, runId: string): Promise<void> {
  await dropRunStaging(connection, runId);
  await connection.run('DROP TABLE IF EXISTS merge_batch');
}
