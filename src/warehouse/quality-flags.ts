import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * The data-quality rules (docs/guarantees.md, "Data quality"): values a report may legally hold — it is
 * loaded — that cannot be true. Each is an SQL condition on a `reports` row; `last_changed_at` is the
 * merge time of the run that wrote the version. Migration 013 writes the same conditions out for its
 * backfill: change both together.
 *
 * - `updated_before_created`: `updatedAt` earlier than `createdAt` (NYC 311's housing agency writes the
 *   day of an update without its time, so it reads as before the creation);
 * - `created_in_future`, `updated_in_future`: more than a day after the run that loaded it (a day covers
 *   every time zone offset and clock skew: a local time mislabelled as UTC is at most 14 h ahead);
 * - `null_island`: latitude and longitude both 0 (San Francisco's Open311 writes 0,0 for "no location").
 */
export const QUALITY_RULES = {
  updated_before_created: 'updated_at < created_at',
  created_in_future: 'created_at > last_changed_at + INTERVAL 1 DAY',
  updated_in_future: 'updated_at > last_changed_at + INTERVAL 1 DAY',
  null_island: 'lat = 0 AND lng = 0',
} as const;

/** The name of a data-quality rule ({@link QUALITY_RULES}). */
export type QualityRule = keyof typeof QUALITY_RULES;

const RULES = Object.entries(QUALITY_RULES);
const ANY = RULES.map(([, sql]) => `(${sql})`).join(' OR ');
const WHICH = RULES.map(([rule, sql]) => `CASE WHEN ${sql} THEN '${rule}' END`).join(', ');

/**
 * Flags the versions a run wrote (inserted, updated or revived: `version_run_id = runId`) that break a
 * rule, one `data_quality_flags` row per version and rule. Call inside the run's finishing transaction,
 * after the merge. A version the run did not write was judged when it was written, so a run that changed
 * nothing flags nothing. Returns the number of flags written.
 */
export async function flagQuality(
  connection: DuckDBConnection,
  run: { runId: string; now: Date },
): Promise<number> {
  const reader = await connection.runAndReadAll(
    `INSERT INTO data_quality_flags (run_id, report_id, rule, flagged_at)
     SELECT $run, id, rule, $now::TIMESTAMPTZ FROM (
       SELECT id, unnest([${WHICH}]) AS rule
       FROM reports WHERE version_run_id = $run AND removed_at IS NULL AND (${ANY})
     ) WHERE rule IS NOT NULL`,
    { run: run.runId, now: run.now.toISOString() },
  );
  return Number(reader.getRows()[0]?.[0] ?? 0);
}

/** Flags a run wrote, by rule (most first), for its summary. */
export async function runQualityFlags(
  connection: DuckDBConnection,
  runId: string,
): Promise<Array<{ rule: string; reports: number }>> {
  const rows = (
    await connection.runAndReadAll(
      `SELECT rule, count(*)::DOUBLE AS n FROM data_quality_flags WHERE run_id = $run
       GROUP BY rule ORDER BY n DESC, rule`,
      { run: runId },
    )
  ).getRows();
  return rows.map((r) => ({ rule: String(r[0]), reports: Number(r[1]) }));
}
