import type { DuckDBConnection } from '@duckdb/node-api';

/** The business columns of `reports` and of each version, in table order. */
export const BUSINESS =
  'status, destination, category, description, lat, lng, address, created_at, updated_at, extra';

/**
 * Closes the current SCD2 version of the reports `ids` names (a subquery of ids): copies each one's row as
 * it was before the run, from `merge_old` (row-rewrite.ts), into `report_versions_closed`, valid from its
 * `last_changed_at` until `now`. Call it for rows the run changes (an update, a revive, a tombstone);
 * migration 011 explains the split.
 *
 * @param now the merge time (ISO), the closed versions' `valid_to`
 */
export async function closeCurrentVersions(c: DuckDBConnection, ids: string, now: string): Promise<void> {
  await c.run(
    `INSERT INTO report_versions_closed (id, valid_from, valid_to, change, ${BUSINESS}, content_hash, run_id)
     SELECT id, last_changed_at, $now::TIMESTAMPTZ, version_change, ${BUSINESS}, content_hash, version_run_id
     FROM merge_old WHERE id IN (${ids})`,
    { now },
  );
}

/**
 * The query of the `report_versions` view (migrations 011, 020): the closed versions, then each report's
 * current one, which is its row in `report_rows` (valid from its `last_changed_at`, `valid_to` NULL).
 *
 * @param hashes with the `content_hash` column (false for the published copy, which drops it)
 */
export function reportVersionsSql({ hashes }: { hashes: boolean }): string {
  const hash = hashes ? ', content_hash' : '';
  return `SELECT id, valid_from, valid_to, change, ${BUSINESS}${hash}, run_id FROM report_versions_closed
    UNION ALL
    SELECT id, last_changed_at AS valid_from, NULL::TIMESTAMPTZ AS valid_to, version_change AS change,
      ${BUSINESS}${hash}, version_run_id AS run_id
    FROM report_rows`;
}
