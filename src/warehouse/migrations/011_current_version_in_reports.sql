-- 011: the current version of each report is its row in `reports`; only closed versions (valid_to set)
-- are stored apart, in `report_versions_closed`. `report_versions` becomes a view of both with the same
-- columns and rows as the table it replaces, so analysts' SQL and the SCD2 contract stay as they were.
-- A first load used to write every report twice (its row and its first version, ~2 s of a 1M load and
-- half the merge's memory); a change now moves the old row into `report_versions_closed` before updating
-- it. The current version's `valid_from` is the report's `last_changed_at` (they were always the same
-- time); its `change` and `run_id` get columns of their own (`run_id` names the run that last saw it).
-- Measured on 1M reports: columns added and updated in place take 0.5 s at memory_limit 256MiB and still
-- finish at 48MiB (they spill); rebuilding `reports` with an INSERT joined to the open versions took 3.2 s
-- and ran out of memory at 256MiB.
ALTER TABLE reports ADD COLUMN version_change VARCHAR;
ALTER TABLE reports ADD COLUMN version_run_id VARCHAR;
UPDATE reports SET version_change = v.change, version_run_id = v.run_id, last_changed_at = v.valid_from
FROM report_versions v
WHERE v.id = reports.id AND v.valid_to IS NULL;
-- No current version recorded (not written by any version of this tool): the row is its own first version.
UPDATE reports SET version_change = 'insert', version_run_id = run_id WHERE version_change IS NULL;

DROP VIEW IF EXISTS report_history;
ALTER TABLE report_versions RENAME TO report_versions_closed;
DELETE FROM report_versions_closed WHERE valid_to IS NULL;

-- Every version of every report (SCD2): the closed ones, then each report's current one.
CREATE VIEW report_versions AS
SELECT id, valid_from, valid_to, change, status, destination, category, description, lat, lng, address,
  created_at, updated_at, extra, content_hash, run_id
FROM report_versions_closed
UNION ALL
SELECT id, last_changed_at AS valid_from, NULL::TIMESTAMPTZ AS valid_to, version_change AS change, status,
  destination, category, description, lat, lng, address, created_at, updated_at, extra, content_hash,
  version_run_id AS run_id
FROM reports;

-- As in 008.
CREATE VIEW report_history AS
SELECT id, valid_from, valid_to, valid_to IS NULL AS is_current, change, status, destination, category,
  description, lat, lng, address, created_at, updated_at, extra, run_id
FROM report_versions;
