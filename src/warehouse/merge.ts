import type { DuckDBConnection } from '@duckdb/node-api';

/** What a merge did, in records. */
export interface MergeResult {
  /** Rows staged by the run. */
  staged: number;
  /** Distinct ids after dedupe. */
  unique: number;
  /** Staged rows superseded by another version of the same id within the run. */
  duplicates: number;
  inserted: number;
  updated: number;
  revived: number;
  unchanged: number;
}

const BUSINESS =
  'status, destination, category, description, lat, lng, address, created_at, updated_at, extra';

/**
 * Merges the run's staging rows into `reports` and `report_versions` (DESIGN.md §6). Call inside the
 * transaction that also finishes the run, so readers never see half a run:
 * 1. dedupe staging by id: latest `updated_at` wins, ties go to the last seen (`seq`) — `ON CONFLICT` alone
 *    would silently keep the first of two duplicates (measured);
 * 2. new ids are inserted, changed ones (content hash differs) updated, tombstoned ones that came back revived;
 *    each of those closes the previous SCD2 version (`valid_to`) and opens a new one (`valid_from = now`);
 * 3. unchanged rows only get `last_seen_at`/`run_id` touched.
 *
 * @param now the merge time, used for `valid_from`/`valid_to`/`last_*_at`
 */
export async function mergeStaging(
  connection: DuckDBConnection,
  run: { runId: string; source: string; now: Date },
): Promise<MergeResult> {
  const params = { run: run.runId, now: run.now.toISOString(), source: run.source };
  const c = connection;
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_batch AS
     SELECT * EXCLUDE (rn) FROM (
       SELECT s.*, row_number() OVER (PARTITION BY id ORDER BY updated_at DESC, seq DESC) AS rn
       FROM staging_reports s WHERE run_id = $run)
     WHERE rn = 1`,
    { run: run.runId },
  );
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_changes AS
     SELECT b.*, CASE WHEN r.id IS NULL THEN 'insert' WHEN r.removed_at IS NOT NULL THEN 'revive' ELSE 'update' END AS change
     FROM merge_batch b LEFT JOIN reports r ON r.id = b.id
     WHERE r.id IS NULL OR r.removed_at IS NOT NULL OR r.content_hash <> b.content_hash`,
  );
  // Touch unchanged rows first, so no row is written twice in this transaction.
  await c.run(
    `UPDATE reports SET last_seen_at = $now::TIMESTAMPTZ, run_id = $run
     FROM merge_batch b
     WHERE reports.id = b.id AND reports.content_hash = b.content_hash AND reports.removed_at IS NULL`,
    { run: run.runId, now: params.now },
  );
  await c.run(
    `UPDATE report_versions SET valid_to = $now::TIMESTAMPTZ
     WHERE valid_to IS NULL AND id IN (SELECT id FROM merge_changes WHERE change <> 'insert')`,
    { now: params.now },
  );
  await c.run(
    `INSERT INTO report_versions (id, valid_from, valid_to, change, ${BUSINESS}, content_hash, run_id)
     SELECT id, $now::TIMESTAMPTZ, NULL, change, ${BUSINESS}, content_hash, $run FROM merge_changes`,
    { run: run.runId, now: params.now },
  );
  await c.run(
    `INSERT INTO reports (id, ${BUSINESS}, content_hash, first_seen_at, last_seen_at, last_changed_at, removed_at, source, run_id)
     SELECT id, ${BUSINESS}, content_hash, $now::TIMESTAMPTZ, $now::TIMESTAMPTZ, $now::TIMESTAMPTZ, NULL, $source, $run
     FROM merge_changes
     ON CONFLICT (id) DO UPDATE SET
       ${BUSINESS.split(', ')
         .map((col) => `${col} = excluded.${col}`)
         .join(', ')},
       content_hash = excluded.content_hash, last_seen_at = excluded.last_seen_at,
       last_changed_at = excluded.last_changed_at, removed_at = NULL, source = excluded.source, run_id = excluded.run_id`,
    params,
  );
  const counts = (
    await c.runAndReadAll(
      `SELECT
         (SELECT count(*) FROM staging_reports WHERE run_id = $run) AS staged,
         (SELECT count(*) FROM merge_batch) AS "unique",
         (SELECT count(*) FILTER (WHERE change = 'insert') FROM merge_changes) AS inserted,
         (SELECT count(*) FILTER (WHERE change = 'update') FROM merge_changes) AS updated,
         (SELECT count(*) FILTER (WHERE change = 'revive') FROM merge_changes) AS revived`,
      { run: run.runId },
    )
  ).getRowObjectsJS()[0]!;
  const staged = Number(counts.staged);
  const unique = Number(counts.unique);
  const inserted = Number(counts.inserted);
  const updated = Number(counts.updated);
  const revived = Number(counts.revived);
  await c.run('DROP TABLE merge_changes');
  return {
    staged,
    unique,
    duplicates: staged - unique,
    inserted,
    updated,
    revived,
    unchanged: unique - inserted - updated - revived,
  };
}

/** Removes the run's staging rows and checkpoints (inside the finishing transaction). */
export async function clearStaging(connection: DuckDBConnection, runId: string): Promise<void> {
  await connection.run('DELETE FROM staging_reports WHERE run_id = $run', { run: runId });
  await connection.run('DELETE FROM sync_checkpoints WHERE run_id = $run', { run: runId });
  await connection.run('DROP TABLE IF EXISTS merge_batch');
}
