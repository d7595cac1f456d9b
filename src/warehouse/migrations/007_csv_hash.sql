-- 007: the content hash of a report's CSV projection (schema/csv-projection.ts), so a CSV run does not make
-- a version when only the representation differs from the NDJSON reading (CSV cells are text).
ALTER TABLE reports ADD COLUMN csv_hash VARCHAR;
ALTER TABLE staging_reports ADD COLUMN csv_hash VARCHAR;
