-- 009: freshness. Conditional full exports (a 304 ends a run as unchanged), what each run changed, and the
-- drift of the upstream's schema and values (see docs/sources.md).

ALTER TABLE sync_runs ADD COLUMN not_modified BOOLEAN;   -- the export answered 304 Not Modified
ALTER TABLE sync_runs ADD COLUMN outcome VARCHAR;        -- changed | unchanged (a succeeded run changed no report)

-- Every status/destination value and every unknown field (with its JSON type) seen so far: the baseline
-- drift is measured against. `format` separates what the JSON sources and the CSV export can tell apart
-- (CSV cells are all strings); values are shared.
CREATE TABLE drift_catalog (
  kind        VARCHAR NOT NULL,                  -- value | field
  format      VARCHAR NOT NULL,                  -- '' for values; json | csv for fields
  field       VARCHAR NOT NULL,                  -- status | destination, or the unknown field's name
  value       VARCHAR NOT NULL,                  -- the value, or the field's JSON type
  first_seen  TIMESTAMPTZ NOT NULL,
  first_run   VARCHAR NOT NULL
);

-- One row per drift a run saw: a new status/destination value, an unknown field appearing or disappearing,
-- a field whose JSON type changed.
CREATE TABLE drift_events (
  run_id      VARCHAR NOT NULL,
  source      VARCHAR NOT NULL,
  kind        VARCHAR NOT NULL,                  -- new_value | new_field | field_gone | type_changed
  field       VARCHAR NOT NULL,
  value       VARCHAR,                           -- the new value, or the field's new JSON type
  first_seen  TIMESTAMPTZ NOT NULL,
  count       BIGINT NOT NULL                    -- records of the run carrying it
);

-- Warehouses that already hold reports start with their values and fields as the baseline.
INSERT INTO drift_catalog
SELECT 'value', '', 'status', status, min(first_seen_at), 'migration-005' FROM reports GROUP BY status;
INSERT INTO drift_catalog
SELECT 'value', '', 'destination', destination, min(first_seen_at), 'migration-005' FROM reports GROUP BY destination;
INSERT INTO drift_catalog
SELECT 'field', CASE WHEN r.source = 'csv' THEN 'csv' ELSE 'json' END, j.key,
  CASE WHEN j.type IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'HUGEINT') THEN 'number' WHEN j.type = 'VARCHAR' THEN 'string'
       ELSE lower(j.type) END,
  min(r.first_seen_at), 'migration-005'
FROM reports r, json_each(r.extra) j
WHERE r.extra IS NOT NULL
GROUP BY ALL;
