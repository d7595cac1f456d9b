-- 006: quarantined bytes stored faithfully. A record whose bytes are not valid UTF-8 cannot be kept in the
-- VARCHAR `raw` as received (DuckDB text must be valid UTF-8, and decoding would substitute U+FFFD), so its
-- bytes are stored base64-encoded and `raw_encoding` says so. Decode with `from_base64(raw)`.

ALTER TABLE rejected_records ADD COLUMN raw_encoding VARCHAR DEFAULT 'text';  -- 'text' (UTF-8 as received) | 'base64' (the raw bytes)

-- The value rules changed (an empty string is no longer NULL, lone surrogates and out-of-range timestamps
-- are quarantined): forget the raw-line hashes, so the next run parses every line once under the new rules
-- instead of skipping lines loaded under the old ones as unchanged (src/normalize/known-lines.ts).
UPDATE reports SET line_hash = NULL;
