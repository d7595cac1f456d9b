-- 002: indexes for the reader on PostgreSQL (docs/deployment.md, "Serving from PostgreSQL"). The reader
-- orders by `created_at` then `id` in byte order (COLLATE "C", as DuckDB compares text), whatever the
-- database's collation: an index serves an ORDER BY only with the same collation, so the indexes of 001
-- (default collation) are replaced. One index per filter the list takes (none, status, destination,
-- both), newest first; one in export order (created_at ascending, then id ascending), which no backward
-- scan of a newest-first index gives.
DROP INDEX IF EXISTS report_rows_current_created;
DROP INDEX IF EXISTS report_rows_current_status;
DROP INDEX IF EXISTS report_rows_current_destination;
CREATE INDEX report_rows_list ON report_rows (created_at DESC, id COLLATE "C") WHERE removed_at IS NULL;
CREATE INDEX report_rows_list_status ON report_rows (status, created_at DESC, id COLLATE "C")
  WHERE removed_at IS NULL;
CREATE INDEX report_rows_list_destination ON report_rows (destination, created_at DESC, id COLLATE "C")
  WHERE removed_at IS NULL;
CREATE INDEX report_rows_list_both ON report_rows (status, destination, created_at DESC, id COLLATE "C")
  WHERE removed_at IS NULL;
CREATE INDEX report_rows_export ON report_rows (created_at, id COLLATE "C") WHERE removed_at IS NULL;
