-- 013: data-quality flags (docs/guarantees.md, "Data quality"): values a report may legally hold, so it is
-- loaded, but that cannot be true (updatedAt before createdAt, a time far after the run that loaded it, a
-- location at 0,0). One row per flagged version: the run that wrote it, the report, the rule. The rules
-- are those of src/warehouse/quality-flags.ts, written out once more here for the backfill.
CREATE TABLE data_quality_flags (
  run_id     VARCHAR NOT NULL,                 -- the run that wrote the flagged version
  report_id  VARCHAR NOT NULL,
  rule       VARCHAR NOT NULL,                 -- updated_before_created | created_in_future | updated_in_future | null_island
  flagged_at TIMESTAMPTZ NOT NULL
);
ALTER TABLE sync_runs ADD COLUMN quality_flags BIGINT DEFAULT 0;

-- The current versions already stored are judged once, as if their run had flagged them.
INSERT INTO data_quality_flags (run_id, report_id, rule, flagged_at)
SELECT version_run_id, id, rule, last_changed_at FROM (
  SELECT version_run_id, id, last_changed_at, unnest([
    CASE WHEN updated_at < created_at THEN 'updated_before_created' END,
    CASE WHEN created_at > last_changed_at + INTERVAL 1 DAY THEN 'created_in_future' END,
    CASE WHEN updated_at > last_changed_at + INTERVAL 1 DAY THEN 'updated_in_future' END,
    CASE WHEN lat = 0 AND lng = 0 THEN 'null_island' END]) AS rule
  FROM reports WHERE removed_at IS NULL
) WHERE rule IS NOT NULL;

-- The flags of the reports the public API serves now: those of each current version.
CREATE VIEW current_quality_flags AS
SELECT f.report_id AS id, f.rule, f.run_id, f.flagged_at
FROM data_quality_flags f JOIN reports r ON r.id = f.report_id AND r.version_run_id = f.run_id
WHERE r.removed_at IS NULL;
