-- 030: the reader's serving index (docs/reader.md, "Paging at any depth"). A page number becomes a seek on
-- `created_at` instead of an OFFSET over every newer report: `reader_page_counts` holds how many current
-- reports each (status, destination, time bucket) has, so the reader knows which buckets hold page P of any
-- filter and reads only their rows (DuckDB's zone maps on `created_at` skip the rest). Every run that
-- changes reports applies its own changes to it in its final transaction (warehouse/serving-index.ts), so
-- its cost follows the change and a reader sees it exactly as the reports it counts.
-- The tables start empty and unbuilt (`bucket_us` NULL); opening the warehouse builds them once.

CREATE TABLE reader_serving (
  bucket_us       BIGINT,            -- width of a time bucket in µs (a power of two); NULL = not built yet
  version         BIGINT NOT NULL,   -- bumped by every change, so a reader can tell its copy is current
  densest_limit   BIGINT,            -- rebuilt with narrower buckets when a bucket holds more reports
  buckets_limit   BIGINT             -- rebuilt with wider buckets when there are more buckets
);
INSERT INTO reader_serving VALUES (NULL, 0, NULL, NULL);

CREATE TABLE reader_page_counts (
  status       VARCHAR NOT NULL,
  destination  VARCHAR NOT NULL,
  bucket       BIGINT NOT NULL,      -- floor(epoch_us(created_at) / bucket_us)
  reports      BIGINT NOT NULL       -- current (not removed) reports of that status, destination and bucket
);

-- The CSV export's extra columns (every key of the current reports' `extra`) in first-seen order along the
-- export order: the report (created_at, id) and position in it where each key first appears.
CREATE TABLE reader_extra_keys (
  key               VARCHAR NOT NULL,
  first_created_at  TIMESTAMPTZ NOT NULL,
  first_id          VARCHAR NOT NULL,
  first_pos         BIGINT NOT NULL
);
