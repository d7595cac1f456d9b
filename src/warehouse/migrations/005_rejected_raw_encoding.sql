-- 005: quarantined bytes stored faithfully. A record whose bytes are not valid UTF-8 cannot be kept in the
-- VARCHAR `raw` as received (DuckDB text must be valid UTF-8, and decoding would substitute U+FFFD), so its
-- bytes are stored base64-encoded and `raw_encoding` says so. Decode with `from_base64(raw)`.

ALTER TABLE rejected_records ADD COLUMN raw_encoding VARCHAR DEFAULT 'text';  -- 'text' (UTF-8 as received) | 'base64' (the raw bytes)
