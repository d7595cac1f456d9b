-- 020: a run's cost follows what changed, not the size of the warehouse (docs/performance.md, "Cost model").
--
-- `reports.last_seen_at` and `reports.run_id` name the last run that saw a report. Writing them on every
-- row a full export saw meant updating every row every night: at 4M reports that UPDATE alone (a VARCHAR
-- column: DuckDB keeps its new strings in memory until the commit) ran out of memory at 256MiB, and it
-- rewrote every row a published copy holds. Now a full export run that saw every current report it does
-- not list in `report_rows.unseen_since` records that once, in `sync_runs.seen_all_at` (its merge time),
-- and `reports` becomes a view that lifts `last_seen_at` and `run_id` of the current reports to that run.
--
-- - `report_rows`: the stored rows (the table `reports` was). Its `last_seen_at`/`run_id` are those of the
--   last run that wrote or touched the row itself.
-- - `report_rows.unseen_since`: set (to the run's merge time) when a full export run did not see the
--   current report (kept because only quarantined, or tombstones were not inferred); its stored
--   `last_seen_at`/`run_id` are then final until a run sees it again, and it is not lifted.
-- - `report_rows.csv_line_hash`: the hash of the CSV row the report was last read from, apart from the
--   NDJSON line's (`line_hash`), so that a weekly CSV run does not make the next NDJSON run parse every
--   line again (and the other way round).
-- - `sync_runs.seen_all_at`: the merge time of a full export run that saw every current report except
--   those marked `unseen_since` (a 304 answer included: the export is the one the last complete run read).
-- - `sync_runs.merged_at`: the merge time of a run that merged (the time its versions and reports carry);
--   the next merge is stamped after the latest one (src/warehouse/merge-time.ts). A run recorded before
--   this migration gets its `finished_at`, which was never before its merge time.
ALTER TABLE reports RENAME TO report_rows;
ALTER TABLE report_rows ADD COLUMN csv_line_hash BIGINT;
ALTER TABLE report_rows ADD COLUMN unseen_since TIMESTAMPTZ;
ALTER TABLE sync_runs ADD COLUMN seen_all_at TIMESTAMPTZ;
ALTER TABLE sync_runs ADD COLUMN merged_at TIMESTAMPTZ;
UPDATE sync_runs SET merged_at = finished_at WHERE status = 'succeeded';

-- One row per report, its current state, with the columns the table had (plus csv_line_hash).
CREATE VIEW reports AS
SELECT r.* EXCLUDE (unseen_since) REPLACE (
    CASE WHEN r.removed_at IS NULL AND r.unseen_since IS NULL AND s.seen_at > r.last_seen_at
         THEN s.seen_at ELSE r.last_seen_at END AS last_seen_at,
    CASE WHEN r.removed_at IS NULL AND r.unseen_since IS NULL AND s.seen_at > r.last_seen_at
         THEN s.run_id ELSE r.run_id END AS run_id)
FROM report_rows r,
  (SELECT max(seen_all_at) AS seen_at, arg_max(run_id, seen_all_at) AS run_id FROM sync_runs) s;

-- As in 008 and 011, over the stored rows (they read no column the view lifts).
CREATE OR REPLACE VIEW current_reports AS
SELECT id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra
FROM report_rows
WHERE removed_at IS NULL;

CREATE OR REPLACE VIEW report_versions AS
SELECT id, valid_from, valid_to, change, status, destination, category, description, lat, lng, address,
  created_at, updated_at, extra, content_hash, run_id
FROM report_versions_closed
UNION ALL
SELECT id, last_changed_at AS valid_from, NULL::TIMESTAMPTZ AS valid_to, version_change AS change, status,
  destination, category, description, lat, lng, address, created_at, updated_at, extra, content_hash,
  version_run_id AS run_id
FROM report_rows;
