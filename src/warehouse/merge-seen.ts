import type { DuckDBConnection } from '@duckdb/node-api';
import { lineHashColumn } from './line-hash-column.js';
import { inSlice, type Slice } from './merge-batch.js';
import { replaceRows } from './row-rewrite.js';

/**
 * The latest full export run that saw every current report not marked `unseen_since` (migration 020): one
 * row, `seen_at` and `run_id` (NULL when there is none yet). The `reports` view lifts to it.
 */
export const LATEST_SEEN_ALL = `(SELECT max(seen_all_at) AS seen_at, arg_max(run_id, seen_all_at) AS run_id FROM sync_runs)`;

/**
 * Whether the row `r` is lifted by the run `s` of {@link LATEST_SEEN_ALL}: it is current, not marked unseen,
 * and its stored `last_seen_at` is older. The `reports` view's rule (migration 020).
 */
const LIFTED = `(r.removed_at IS NULL AND r.unseen_since IS NULL AND s.seen_at > r.last_seen_at)`;

/**
 * The `last_seen_at` the `reports` view shows for a `report_rows` row aliased `r`, with
 * {@link LATEST_SEEN_ALL} aliased `s`: stored when the row stops being lifted (tombstoned, or marked unseen).
 */
export const LIFTED_SEEN_AT = `CASE WHEN ${LIFTED} THEN s.seen_at ELSE r.last_seen_at END`;

/** The `run_id` the `reports` view shows for a row, as {@link LIFTED_SEEN_AT}. */
const LIFTED_RUN_ID = `CASE WHEN ${LIFTED} THEN s.run_id ELSE r.run_id END`;

/**
 * For a full export run: builds the TEMP table `merge_unseen`, the current reports the run did not see (not
 * among its known lines, no id it staged), and returns how many current reports it saw. Call after
 * {@link buildMergeBatch} and before any row changes. Two joins, each in slices of about `sliceRows`
 * (by a hash of the key joined on) so that each one's hash table fits DuckDB's memory limit whatever the
 * warehouse's size: the current reports whose line hash is none or one not read (`unseenLines` defined:
 * the hashes of `merge_unseen_lines`, seen-marks.ts), else those not among the run's staged known lines
 * (an anti-join; skipped when it has none); then what is left against `merge_batch` (by id).
 */
export async function findUnseen(
  c: DuckDBConnection,
  run: {
    runId: string;
    source: string;
    knownLines: number;
    unseenLines?: number | undefined;
    stagedRows: number;
    sliceRows: number;
  },
): Promise<{ seen: number; unseen: number }> {
  const hash = lineHashColumn(run.source);
  const slicesOf = (rows: number) => Math.max(1, Math.ceil(rows / run.sliceRows));
  // The line hashes that do not account for a current report, per slice: those not read (marks), or
  // those not among the staged known lines.
  const unknown:
    { rows: number; hashIsUnknown: (s: Slice) => string; params: Record<string, string> } | undefined =
    run.unseenLines !== undefined
      ? {
          rows: run.unseenLines,
          hashIsUnknown: (s: Slice) =>
            `r.${hash} IN (SELECT u.line_hash FROM merge_unseen_lines u WHERE ${inSlice('u.line_hash', s)})`,
          params: {},
        }
      : run.knownLines > 0
        ? {
            rows: run.knownLines,
            hashIsUnknown: (s: Slice) => `NOT EXISTS (SELECT 1 FROM staging_seen k
              WHERE k.run_id = $run AND ${inSlice('k.line_hash', s)} AND k.line_hash = r.${hash})`,
            params: { run: run.runId },
          }
        : undefined;
  let candidates = '(SELECT id FROM report_rows WHERE removed_at IS NULL)';
  if (unknown) {
    await c.run('CREATE OR REPLACE TEMP TABLE merge_unknown (id VARCHAR)');
    const slices = slicesOf(unknown.rows);
    for (let slice = 0; slice < slices; slice++) {
      const s = { slice, slices };
      await c.run(
        `INSERT INTO merge_unknown SELECT r.id FROM report_rows r
         WHERE r.removed_at IS NULL
           AND ((r.${hash} IS NULL AND ${slice} = 0) OR (${inSlice(`r.${hash}`, s)} AND ${unknown.hashIsUnknown(s)}))`,
        unknown.params,
      );
    }
    candidates = 'merge_unknown';
  }
  await c.run('CREATE OR REPLACE TEMP TABLE merge_unseen (id VARCHAR)');
  const slices = slicesOf(run.stagedRows);
  for (let slice = 0; slice < slices; slice++) {
    const s = { slice, slices };
    await c.run(
      `INSERT INTO merge_unseen SELECT id FROM ${candidates}
       WHERE ${inSlice('id', s)} AND id NOT IN (SELECT id FROM merge_batch WHERE ${inSlice('id', s)})`,
    );
  }
  await c.run('DROP TABLE IF EXISTS merge_unknown');
  const row = (
    await c.runAndReadAll(
      `SELECT (SELECT count(*) FROM merge_unseen) AS unseen,
         (SELECT count(*) FROM report_rows WHERE removed_at IS NULL) AS current,
         (SELECT count(*) FROM merge_batch WHERE change IN ('insert', 'revive')) AS added`,
    )
  ).getRowObjectsJS()[0]!;
  const unseen = Number(row.unseen);
  // Every current report after the merge that is not unseen was seen: the current ones before it, less the
  // unseen, plus the ids it inserts or revives.
  return { seen: Number(row.current) - unseen + Number(row.added), unseen };
}

/**
 * The end of a full export run's merge, after its tombstones (inside the finishing transaction): the
 * reports it saw get its merge time and run id as their `last_seen_at` and `run_id`, without writing
 * their rows when they are most of the warehouse (migration 020):
 * - when the run saw at least as many current reports as it did not: it has seen them all (returns true:
 *   the caller records its merge time as `sync_runs.seen_all_at` through the run log, runs.ts, at once:
 *   the `reports` view lifts them to it), except the current reports it did not see (`merge_unseen` not
 *   tombstoned), whose lifted values are stored and which are marked `unseen_since`; and reports marked so
 *   earlier that it saw are written and unmarked;
 * - otherwise (an export that holds less than half the warehouse and was kept from tombstoning): the
 *   reports it saw are written one by one (touched), as a `recent` run's are.
 *
 * @param now the merge time (ISO)
 * @returns true when the run counts as having seen every current report (the first case)
 */
export async function recordSeen(
  c: DuckDBConnection,
  run: { runId: string; now: string; seen: number },
): Promise<boolean> {
  const params = { run: run.runId, now: run.now };
  await c.run('CREATE TEMP TABLE IF NOT EXISTS merge_removed (id VARCHAR)');
  const unseen = Number(
    (
      await c.runAndReadAll(
        `SELECT count(*) AS n FROM merge_unseen WHERE id NOT IN (SELECT id FROM merge_removed)`,
      )
    ).getRowObjectsJS()[0]!.n,
  );
  if (unseen > run.seen) {
    // Less than half seen: touch what was (a full scan), record nothing for the rest.
    await replaceRows(
      c,
      `SELECT r.* REPLACE ($now::TIMESTAMPTZ AS last_seen_at, $run AS run_id, NULL::TIMESTAMPTZ AS unseen_since)
       FROM report_rows r
       WHERE r.removed_at IS NULL AND r.last_seen_at < $now::TIMESTAMPTZ AND r.id NOT IN (SELECT id FROM merge_unseen)`,
      params,
    );
    return false;
  }
  // merge_old holds every row marked unseen and every one in merge_unseen (merge.ts); rows in merge_batch
  // were rewritten by the merge, those in merge_removed by the tombstones.
  await replaceRows(
    c,
    `SELECT r.* REPLACE ($now::TIMESTAMPTZ AS last_seen_at, $run AS run_id, NULL::TIMESTAMPTZ AS unseen_since)
     FROM merge_old r
     WHERE r.unseen_since IS NOT NULL AND r.id NOT IN (SELECT id FROM merge_unseen)
       AND r.id NOT IN (SELECT id FROM merge_batch)
     UNION ALL
     SELECT r.* REPLACE (${LIFTED_SEEN_AT} AS last_seen_at, ${LIFTED_RUN_ID} AS run_id,
       $now::TIMESTAMPTZ AS unseen_since)
     FROM merge_old r, ${LATEST_SEEN_ALL} s
     WHERE r.unseen_since IS NULL AND r.id IN (SELECT id FROM merge_unseen)
       AND r.id NOT IN (SELECT id FROM merge_removed)`,
    params,
  );
  return true;
}
