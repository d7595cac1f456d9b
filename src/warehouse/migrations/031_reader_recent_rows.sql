-- 031: the reader's recent rows (docs/reader.md, "Paging at any depth"). A run rewrites the reports it
-- changed at the end of `report_rows`, so after a few nightly runs every list page read the row groups of
-- each of those runs in full (each spans the whole time axis: zone maps on `created_at` cannot skip them).
-- `reader_serving.split_at` splits the current reports in two: those last changed at or before it are read
-- from `report_rows` (its zone maps on `last_changed_at` skip the row groups runs appended since, as those on
-- `created_at` skip the rest), those changed after it from `reader_page_recent`, the same columns kept
-- sorted by `created_at` by every run that changed reports (warehouse/serving-recent.ts). NULL: not set yet
-- (set by the next build or run). Not in the published copy: a reader of the copy reads `report_rows` only.
ALTER TABLE reader_serving ADD COLUMN split_at TIMESTAMPTZ;
-- Recent rows appended (by runs that changed few reports) since they were last written sorted.
ALTER TABLE reader_serving ADD COLUMN recent_appended BIGINT DEFAULT 0;

CREATE TABLE reader_page_recent (
  id           VARCHAR NOT NULL,
  status       VARCHAR NOT NULL,
  destination  VARCHAR NOT NULL,
  category     VARCHAR,
  description  VARCHAR,
  lat          DOUBLE,
  lng          DOUBLE,
  address      VARCHAR,
  created_at   TIMESTAMPTZ NOT NULL,
  updated_at   TIMESTAMPTZ NOT NULL,
  extra        JSON,
  removed_at   TIMESTAMPTZ          -- always NULL (current reports only): the reader's filters name it
);
