-- 001: the warehouse model of docs/how-a-sync-works.md.
-- Times are TIMESTAMPTZ (UTC instants). Counts are BIGINT. `extra` keeps unknown upstream fields as JSON.

CREATE TABLE sync_runs (
  run_id            VARCHAR PRIMARY KEY,
  job               VARCHAR NOT NULL,
  source            VARCHAR NOT NULL,          -- ndjson | csv | stats
  status            VARCHAR NOT NULL,          -- running | succeeded | failed | aborted
  started_at        TIMESTAMPTZ NOT NULL,
  finished_at       TIMESTAMPTZ,
  upstream_url      VARCHAR,                   -- without secrets
  export_etag       VARCHAR,
  export_last_modified VARCHAR,
  attempts          INTEGER NOT NULL DEFAULT 0,
  records_read      BIGINT NOT NULL DEFAULT 0, -- records seen (valid + rejected), blank lines excluded
  records_loaded    BIGINT NOT NULL DEFAULT 0, -- valid records staged
  records_rejected  BIGINT NOT NULL DEFAULT 0,
  duplicates        BIGINT NOT NULL DEFAULT 0, -- staged records superseded by a later version of the same id
  inserted          BIGINT NOT NULL DEFAULT 0,
  updated           BIGINT NOT NULL DEFAULT 0,
  unchanged         BIGINT NOT NULL DEFAULT 0,
  removed           BIGINT NOT NULL DEFAULT 0, -- tombstoned by this run
  revived           BIGINT NOT NULL DEFAULT 0,
  bytes_read        BIGINT NOT NULL DEFAULT 0,
  pages             INTEGER NOT NULL DEFAULT 0,
  complete          BOOLEAN,                   -- the export was read to its end
  tombstones_note   VARCHAR,                   -- why tombstones were or were not inferred
  stats_total_upstream  BIGINT,
  stats_total_warehouse BIGINT,
  stats_total_diff      BIGINT,
  error             JSON                       -- {code, message, context} of a failed run
);

CREATE TABLE reports (
  id              VARCHAR PRIMARY KEY,
  status          VARCHAR NOT NULL,
  destination     VARCHAR NOT NULL,
  category        VARCHAR,
  description     VARCHAR,
  lat             DOUBLE,
  lng             DOUBLE,
  address         VARCHAR,
  created_at      TIMESTAMPTZ NOT NULL,
  updated_at      TIMESTAMPTZ NOT NULL,
  extra           JSON,
  content_hash    VARCHAR NOT NULL,
  first_seen_at   TIMESTAMPTZ NOT NULL,
  last_seen_at    TIMESTAMPTZ NOT NULL,
  last_changed_at TIMESTAMPTZ NOT NULL,
  removed_at      TIMESTAMPTZ,                 -- tombstone: gone from a complete export
  source          VARCHAR NOT NULL,            -- export that last wrote the row
  run_id          VARCHAR NOT NULL             -- run that last wrote or saw the row
);

-- SCD2 history: one row per distinct version; the current one has valid_to NULL.
CREATE TABLE report_versions (
  id            VARCHAR NOT NULL,
  valid_from    TIMESTAMPTZ NOT NULL,
  valid_to      TIMESTAMPTZ,
  change        VARCHAR NOT NULL,              -- insert | update | revive | remove
  status        VARCHAR NOT NULL,
  destination   VARCHAR NOT NULL,
  category      VARCHAR,
  description   VARCHAR,
  lat           DOUBLE,
  lng           DOUBLE,
  address       VARCHAR,
  created_at    TIMESTAMPTZ NOT NULL,
  updated_at    TIMESTAMPTZ NOT NULL,
  extra         JSON,
  content_hash  VARCHAR NOT NULL,
  run_id        VARCHAR NOT NULL
);

-- Run-scoped staging: appended in batches, merged once at the end of the run, then cleared.
CREATE TABLE staging_reports (
  run_id        VARCHAR NOT NULL,
  seq           BIGINT NOT NULL,               -- order of arrival in the run: "last seen wins" on ties
  location      VARCHAR NOT NULL,
  id            VARCHAR NOT NULL,
  status        VARCHAR NOT NULL,
  destination   VARCHAR NOT NULL,
  category      VARCHAR,
  description   VARCHAR,
  lat           DOUBLE,
  lng           DOUBLE,
  address       VARCHAR,
  created_at    TIMESTAMPTZ NOT NULL,
  updated_at    TIMESTAMPTZ NOT NULL,
  extra         JSON,
  content_hash  VARCHAR NOT NULL
);

-- One row per committed batch/page: what resume continues from.
CREATE TABLE sync_checkpoints (
  run_id        VARCHAR NOT NULL,
  batch         INTEGER NOT NULL,
  page          INTEGER,
  records_read  BIGINT NOT NULL,
  records_loaded BIGINT NOT NULL,
  records_rejected BIGINT NOT NULL,
  bytes_read    BIGINT NOT NULL,
  next_url      VARCHAR,
  committed_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE rejected_records (
  run_id        VARCHAR NOT NULL,
  source        VARCHAR NOT NULL,
  location      VARCHAR NOT NULL,              -- "line 12" / "page 3, row 17, line 40"
  line          BIGINT,
  page          INTEGER,
  "row"         BIGINT,
  record_id     VARCHAR,                       -- the id when one could be read
  raw           VARCHAR NOT NULL,              -- text as received, cut to REPORTS_REJECT_RAW_MAX_BYTES
  raw_truncated BOOLEAN NOT NULL,
  raw_bytes     BIGINT NOT NULL,
  issues        JSON NOT NULL,                 -- [{path, message}] (zod issue paths)
  rejected_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE stats_snapshots (
  taken_at  TIMESTAMPTZ NOT NULL,
  run_id    VARCHAR NOT NULL,
  source    VARCHAR NOT NULL,                  -- upstream | warehouse
  body      JSON NOT NULL
);

CREATE TABLE stats_values (
  taken_at  TIMESTAMPTZ NOT NULL,
  run_id    VARCHAR NOT NULL,
  source    VARCHAR NOT NULL,
  metric    VARCHAR NOT NULL,                  -- flattened path, e.g. byStatus.SUBMITTED
  value     DOUBLE NOT NULL
);
