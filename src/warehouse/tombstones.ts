import type { DuckDBConnection } from '@duckdb/node-api';
import { LATEST_SEEN_ALL, LIFTED_SEEN_AT } from './merge-seen.js';
import { replaceRows } from './row-rewrite.js';
import { closeCurrentVersions } from './versions.js';

/**
 * How `sync_runs.tombstones_note` begins when a complete export's deletes were held back by a guard of
 * {@link applyTombstones} (no `/stats` total, a count that differs, rows no one can name, …).
 */
export const HELD_BACK = 'no tombstones:';

/** What {@link applyTombstones} needs to know about the run. */
export interface TombstoneInput {
  runId: string;
  /** Distinct valid reports of the run, all current after its merge (`MergeResult.unique`). */
  seen: number;
  /** The merge time: `removed_at` and the SCD2 `valid_from`/`valid_to` of the removal. */
  now: Date;
  /** The export was a full export read to its end (docs/how-a-sync-works.md: an incomplete run never infers deletes). */
  complete: boolean;
  /** Why it is not complete, for the note. */
  incompleteReason?: string | undefined;
  /**
   * Why the complete export cannot be proven to be one version of the upstream (a paged export without a
   * validator): set, nothing is removed.
   */
  inconsistentReason?: string | undefined;
  /** `total` of the upstream `/stats` taken with this run, or `undefined` when there was none. */
  statsTotal: number | undefined;
  /** Why there is no stats total (fetch failed, no numeric `total`), for the note. */
  statsProblem?: string | undefined;
  /** `REPORTS_TOMBSTONE_MIN_SHARE`: the export must hold at least this share (0–1) of the current reports. */
  minShare: number;
  /** `REPORTS_STATS_DIFF_WARN`: how many reports the export and `/stats` total may differ by. */
  statsTolerance: number;
}

/** The outcome: reports tombstoned and the sentence `sync_runs.tombstones_note` keeps. */
export interface TombstoneResult {
  removed: number;
  note: string;
}

/**
 * Tombstones the reports a complete, clean full export no longer holds (docs/how-a-sync-works.md). Call
 * inside the run's finishing transaction right after `mergeStaging` of a full export (when reports are
 * missing it reads the TEMP table `merge_unseen`: the current reports the run did not see, merge-seen.ts).
 *
 * Guards, checked in this order; when one holds nothing is removed and the note says why:
 * 1. the export is incomplete (stopped early, e.g. the server ignored `page`, or a short page before the
 *    `/stats` total was reached);
 * 1b. the export cannot be proven consistent (`inconsistentReason`: pages without a common validator);
 * 2. there is no upstream `/stats` total to check it against;
 * 3. the export holds fewer distinct valid reports than `minShare` of the warehouse's current reports
 *    (a truncated or half-served export);
 * 4. its count differs from the `/stats` total by more than `statsTolerance`, counted either way: valid
 *    reports only, or with the ids only quarantined by this run added (an upstream's `/stats` may count
 *    the records it thinks valid and this run quarantined).
 * 5. reports are missing, this run quarantined records without a readable id (a CSV row broken by a
 *    quote, a line that is not JSON), and the `/stats` total is above the valid reports read: any missing
 *    report may be one of those rows, so none can be proven gone. With a total at or below them, the
 *    upstream counts no report the run could not name: such rows are no reports of it (a capture's
 *    `"id": null` line), and they do not stop deletes for as long as the upstream serves them.
 * Records quarantined by this run that carry an id count as seen: a report whose new version is invalid
 * is still upstream and is not removed.
 *
 * A removal keeps SCD2 consistent: the open version gets `valid_to = now`, a `change = 'remove'` version
 * (the last business values, `valid_from = now`, open) is added, and `reports.removed_at = now`. A report
 * that comes back later is revived by the merge (`change = 'revive'`), which closes the `remove` version.
 */
export async function applyTombstones(
  connection: DuckDBConnection,
  input: TombstoneInput,
): Promise<TombstoneResult> {
  const c = connection;
  const counts = (
    await c.runAndReadAll(`SELECT count(*) AS current FROM report_rows WHERE removed_at IS NULL`)
  ).getRowObjectsJS()[0];
  const seen = input.seen;
  const current = Number(counts?.current ?? 0);
  const none = (note: string): TombstoneResult => ({ removed: 0, note: `${HELD_BACK} ${note}` });
  if (!input.complete) {
    return none(`the export is incomplete${input.incompleteReason ? ` (${input.incompleteReason})` : ''}`);
  }
  if (input.inconsistentReason !== undefined) {
    return none(`the export cannot be proven consistent (${input.inconsistentReason})`);
  }
  if (input.statsTotal === undefined) {
    return none(`no upstream /stats total to check the export against (${input.statsProblem ?? 'unknown'})`);
  }
  if (seen < input.minShare * current) {
    return none(
      `the export holds ${seen} reports, fewer than ${fmtShare(input.minShare)} of the ${current} current ones ` +
        '(REPORTS_TOMBSTONE_MIN_SHARE): truncated or partial?',
    );
  }
  if (Math.abs(input.statsTotal - seen) > input.statsTolerance) {
    // An upstream's /stats may count the records this run quarantined (valid to it): they are in the export.
    const quarantined = await quarantinedOnly(c, input.runId);
    if (Math.abs(input.statsTotal - seen - quarantined) > input.statsTolerance) {
      return none(
        `the export holds ${seen} reports but /stats total says ${input.statsTotal} ` +
          `(tolerance ${input.statsTolerance}, REPORTS_STATS_DIFF_WARN; ${quarantined} more ids only quarantined)`,
      );
    }
  }
  const missing = current === seen ? 0 : await findMissing(c, input.runId);
  // Rows no one can name hide a missing report only if `/stats` counts more reports than the run named.
  const counted = input.statsTotal > seen;
  const unread = missing === 0 || !counted ? 0 : await quarantinedWithoutId(c, input.runId);
  if (unread > 0) {
    return none(
      `${unread} records this run quarantined have no readable id, and any of the ${missing} reports missing ` +
        'from the export may be among them',
    );
  }
  const removed = missing === 0 ? 0 : await tombstoneMissing(c, input);
  return {
    removed,
    note:
      removed === 0
        ? `complete export of ${seen} reports (consistent with /stats total ${input.statsTotal}): none missing`
        : `${removed} reports missing from a complete export of ${seen} reports (consistent with /stats total ${input.statsTotal}) tombstoned`,
  };
}

/**
 * Fills the TEMP table `merge_removed` with the current reports the run did not see (`merge_unseen`) and
 * did not quarantine, and returns how many. Skipped by {@link applyTombstones} when the counts already
 * prove none is missing.
 */
async function findMissing(c: DuckDBConnection, runId: string): Promise<number> {
  await c.run(
    `CREATE OR REPLACE TEMP TABLE merge_removed AS
     SELECT u.id FROM merge_unseen u
     WHERE NOT EXISTS (SELECT 1 FROM rejected_records j WHERE j.run_id = $run AND j.record_id = u.id)`,
    { run: runId },
  );
  return Number(
    (await c.runAndReadAll('SELECT count(*) AS n FROM merge_removed')).getRowObjectsJS()[0]?.n ?? 0,
  );
}

/** Records the run quarantined without a readable id (`record_id` NULL): rows of the export no one can name. */
async function quarantinedWithoutId(c: DuckDBConnection, runId: string): Promise<number> {
  const reader = await c.runAndReadAll(
    `SELECT count(*) AS n FROM rejected_records WHERE run_id = $run AND record_id IS NULL`,
    { run: runId },
  );
  return Number(reader.getRowObjectsJS()[0]?.n ?? 0);
}

/**
 * Tombstones the reports of `merge_removed` ({@link findMissing}); returns how many. The removed rows keep
 * the `last_seen_at` the `reports` view showed for them (merge-seen.ts: they are no longer lifted).
 */
async function tombstoneMissing(c: DuckDBConnection, run: { runId: string; now: Date }): Promise<number> {
  const params = { run: run.runId, now: run.now.toISOString() };
  const removed = Number(
    (await c.runAndReadAll('SELECT count(*) AS n FROM merge_removed')).getRowObjectsJS()[0]?.n ?? 0,
  );
  if (removed > 0) {
    // The removal is a version of its own (change 'remove', same fields): the row's current version.
    await closeCurrentVersions(c, 'SELECT id FROM merge_removed', params.now);
    await replaceRows(
      c,
      `SELECT r.* REPLACE (${LIFTED_SEEN_AT} AS last_seen_at, $now::TIMESTAMPTZ AS removed_at,
         $now::TIMESTAMPTZ AS last_changed_at, 'remove' AS version_change, $run AS version_run_id, $run AS run_id,
         NULL::TIMESTAMPTZ AS unseen_since)
       FROM merge_old r, ${LATEST_SEEN_ALL} s
       WHERE r.id IN (SELECT id FROM merge_removed)`,
      params,
    );
  }
  return removed;
}

/**
 * Distinct ids the run quarantined that are no report it saw: not a current report, or one in
 * `merge_unseen` (after the merge every current report not in it was seen).
 */
async function quarantinedOnly(c: DuckDBConnection, runId: string): Promise<number> {
  const reader = await c.runAndReadAll(
    `SELECT count(DISTINCT j.record_id) AS n FROM rejected_records j
     WHERE j.run_id = $run AND j.record_id IS NOT NULL
       AND (j.record_id IN (SELECT id FROM merge_unseen)
            OR NOT EXISTS (SELECT 1 FROM report_rows r WHERE r.id = j.record_id AND r.removed_at IS NULL))`,
    { run: runId },
  );
  return Number(reader.getRowObjectsJS()[0]?.n ?? 0);
}

function fmtShare(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}
