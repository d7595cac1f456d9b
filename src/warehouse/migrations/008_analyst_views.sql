-- 008: the views analysts and BI tools query (docs/dashboards.md). Business columns only: the upstream
-- fields, no internal hashes or bookkeeping, so a dashboard built on them survives changes of the sync.

-- The reports the public API serves now: current, not removed (tombstoned).
CREATE VIEW current_reports AS
SELECT id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra
FROM reports
WHERE removed_at IS NULL;

-- Every version of every report (SCD2): valid from `valid_from` until `valid_to` (NULL = the current
-- version); `change` says how the version came (insert, update, revive, remove).
CREATE VIEW report_history AS
SELECT id, valid_from, valid_to, valid_to IS NULL AS is_current, change, status, destination, category,
  description, lat, lng, address, created_at, updated_at, extra, run_id
FROM report_versions;
