-- 005: `sync_runs.bytes_wire`, the response bodies' bytes as they came over the wire. A body sent with
-- `Content-Encoding` (gzip, deflate, br) is decoded before it is read; `bytes_read` keeps meaning the
-- decoded bytes (what the extractor read), so runs before and after compression stay comparable.
ALTER TABLE sync_runs ADD COLUMN bytes_wire BIGINT DEFAULT 0;
