-- 004: `reports` without the PRIMARY KEY index. DuckDB holds a PRIMARY KEY's ART index in memory
-- while a transaction inserts into it: loading 4M reports in one merge transaction failed with "failed to
-- pin block" at memory_limit 256MiB (measured; 1M fit), so the warehouse could not take one run of a large
-- export. Ids stay unique by construction: the merge groups the run's records by id and inserts only ids
-- that the LEFT JOIN with `reports` did not find (src/warehouse/merge.ts); lookups by id are scans pruned
-- by zone maps, and the merge's joins are hash joins that spill.

CREATE TABLE reports_next (
  id              VARCHAR NOT NULL,
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
  removed_at      TIMESTAMPTZ,
  source          VARCHAR NOT NULL,
  run_id          VARCHAR NOT NULL,
  line_hash       BIGINT
);
INSERT INTO reports_next SELECT id, status, destination, category, description, lat, lng, address, created_at,
  updated_at, extra, content_hash, first_seen_at, last_seen_at, last_changed_at, removed_at, source, run_id,
  line_hash
FROM reports ORDER BY id;
DROP TABLE reports;
ALTER TABLE reports_next RENAME TO reports;
