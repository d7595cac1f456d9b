-- 001: the tables and views analysts query in DuckDB, as PostgreSQL serving tables (docs/deployment.md,
-- "Serving from PostgreSQL"). Run with search_path set to the serving schema (REPORTS_POSTGRES_SCHEMA).
-- Business columns only: the change-detection hashes of the warehouse stay in DuckDB.

CREATE TABLE sync_runs (
  run_id text PRIMARY KEY,
  job text NOT NULL,
  source text NOT NULL,
  status text NOT NULL,
  started_at timestamptz NOT NULL,
  finished_at timestamptz,
  upstream_url text,
  export_etag text,
  export_last_modified text,
  attempts integer,
  records_read bigint,
  records_loaded bigint,
  records_rejected bigint,
  duplicates bigint,
  inserted bigint,
  updated bigint,
  unchanged bigint,
  removed bigint,
  revived bigint,
  bytes_read bigint,
  pages integer,
  complete boolean,
  tombstones_note text,
  stats_total_upstream bigint,
  stats_total_warehouse bigint,
  stats_total_diff bigint,
  error jsonb,
  page_size integer,
  resumed_from_run text,
  resumed_at_page integer,
  bytes_wire bigint,
  not_modified boolean,
  outcome text,
  refined bigint,
  quality_flags bigint,
  seen_all_at timestamptz,
  merged_at timestamptz,
  note text
);
-- The `reports` view asks for the latest run that saw every report.
CREATE INDEX sync_runs_seen_all_at ON sync_runs (seen_all_at DESC) WHERE seen_all_at IS NOT NULL;

-- The stored rows of `reports` (one per report: its current version, tombstoned ones included).
CREATE TABLE report_rows (
  id text PRIMARY KEY,
  status text NOT NULL,
  destination text NOT NULL,
  category text,
  description text,
  lat double precision,
  lng double precision,
  address text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  extra jsonb,
  first_seen_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  last_changed_at timestamptz NOT NULL,
  removed_at timestamptz,
  source text NOT NULL,
  run_id text NOT NULL,
  version_change text,
  version_run_id text,
  unseen_since timestamptz
);

-- What the reader asks: current reports, optionally by status or destination, newest first.
CREATE INDEX report_rows_current_created ON report_rows (created_at DESC, id) WHERE removed_at IS NULL;
CREATE INDEX report_rows_current_status ON report_rows (status, created_at DESC, id) WHERE removed_at IS NULL;
CREATE INDEX report_rows_current_destination ON report_rows (destination, created_at DESC, id)
  WHERE removed_at IS NULL;

CREATE TABLE report_versions_closed (
  id text NOT NULL,
  valid_from timestamptz NOT NULL,
  valid_to timestamptz NOT NULL,
  change text NOT NULL,
  status text NOT NULL,
  destination text NOT NULL,
  category text,
  description text,
  lat double precision,
  lng double precision,
  address text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  extra jsonb,
  run_id text NOT NULL
);
CREATE INDEX report_versions_closed_id ON report_versions_closed (id, valid_from);
CREATE INDEX report_versions_closed_valid_to ON report_versions_closed (valid_to);

CREATE TABLE rejected_records (
  run_id text NOT NULL,
  source text NOT NULL,
  location text NOT NULL,
  line bigint,
  page integer,
  "row" bigint,
  record_id text,
  raw text NOT NULL,
  raw_truncated boolean NOT NULL,
  raw_bytes bigint NOT NULL,
  issues jsonb NOT NULL,
  rejected_at timestamptz NOT NULL,
  raw_encoding text
);
CREATE INDEX rejected_records_run ON rejected_records (run_id);

-- `body` is the upstream's /stats answer: json (its text as received), not jsonb.
CREATE TABLE stats_snapshots (
  taken_at timestamptz NOT NULL,
  run_id text NOT NULL,
  source text NOT NULL,
  body json NOT NULL
);
CREATE INDEX stats_snapshots_run ON stats_snapshots (run_id);

CREATE TABLE stats_values (
  taken_at timestamptz NOT NULL,
  run_id text NOT NULL,
  source text NOT NULL,
  metric text NOT NULL,
  value double precision NOT NULL
);
CREATE INDEX stats_values_run ON stats_values (run_id);

CREATE TABLE drift_events (
  run_id text NOT NULL,
  source text NOT NULL,
  kind text NOT NULL,
  field text NOT NULL,
  value text,
  first_seen timestamptz NOT NULL,
  count bigint NOT NULL
);
CREATE INDEX drift_events_run ON drift_events (run_id);

-- Rows PostgreSQL cannot store (U+0000 in text, a lone surrogate escape in JSON): kept in DuckDB, named
-- here with the reason, never changed silently. `row_key` is the row's key columns as a JSON array.
CREATE TABLE publish_refused (
  table_name text NOT NULL,
  row_key text NOT NULL,
  run_id text,
  reason text NOT NULL,
  refused_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (table_name, row_key)
);

-- The publish bookkeeping: one row, written in the transaction that applies a change set.
CREATE TABLE publish_state (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  watermark timestamptz,          -- the latest merge time applied (sync_runs.merged_at)
  runs_started_max timestamptz,   -- the latest run start applied
  last_run_id text,               -- the latest run applied
  mode text NOT NULL,             -- full | changes: how the last publish went
  published_at timestamptz NOT NULL,
  warehouse text                  -- the DuckDB file published from
);

-- Views as in the warehouse: `reports` lifts last_seen_at/run_id of current reports to the latest run that
-- saw every report (sync_runs.seen_all_at).
CREATE VIEW reports AS
SELECT r.id, r.status, r.destination, r.category, r.description, r.lat, r.lng, r.address, r.created_at,
  r.updated_at, r.extra, r.first_seen_at,
  CASE WHEN r.removed_at IS NULL AND r.unseen_since IS NULL AND s.seen_at > r.last_seen_at
       THEN s.seen_at ELSE r.last_seen_at END AS last_seen_at,
  r.last_changed_at, r.removed_at, r.source,
  CASE WHEN r.removed_at IS NULL AND r.unseen_since IS NULL AND s.seen_at > r.last_seen_at
       THEN s.run_id ELSE r.run_id END AS run_id,
  r.version_change, r.version_run_id
FROM report_rows r
LEFT JOIN (SELECT run_id, seen_all_at AS seen_at FROM sync_runs WHERE seen_all_at IS NOT NULL
           ORDER BY seen_all_at DESC LIMIT 1) s ON true;

CREATE VIEW current_reports AS
SELECT id, status, destination, category, description, lat, lng, address, created_at, updated_at, extra
FROM report_rows
WHERE removed_at IS NULL;

CREATE VIEW report_versions AS
SELECT id, valid_from, valid_to, change, status, destination, category, description, lat, lng, address,
  created_at, updated_at, extra, run_id
FROM report_versions_closed
UNION ALL
SELECT id, last_changed_at AS valid_from, NULL::timestamptz AS valid_to, version_change AS change, status,
  destination, category, description, lat, lng, address, created_at, updated_at, extra,
  version_run_id AS run_id
FROM report_rows;

CREATE VIEW report_history AS
SELECT id, valid_from, valid_to, valid_to IS NULL AS is_current, change, status, destination, category,
  description, lat, lng, address, created_at, updated_at, extra, run_id
FROM report_versions;
