-- 043: how a run read the upstream (`sync_runs.reading`: the validation rules' version and the upstream
-- reading settings, REPORTS_FIELD_NAMES and REPORTS_SOURCE_TIME_ZONE). The merge keeps a report as stored
-- when a run's copy is older than it, but only against a version read the same way: a changed time zone
-- may move a timestamp back, and that correction must be taken. NULL for runs before it.
ALTER TABLE sync_runs ADD COLUMN reading VARCHAR;
