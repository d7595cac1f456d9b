-- 003: skip unchanged records early. A run hashes each raw export line (64 bits, keyed by source
-- and header, see src/normalize/known-lines.ts) before parsing it; a line whose hash a current report holds is
-- not parsed, validated or staged again, only its hash is staged in `staging_seen` so the merge marks that
-- report seen (last_seen_at, run_id, and not tombstoned).

ALTER TABLE reports ADD COLUMN line_hash BIGINT;          -- hash of the raw line the current row was loaded or last seen from
ALTER TABLE staging_reports ADD COLUMN line_hash BIGINT;  -- hash of the staged record's raw line (NULL when not hashed)

-- Known lines of a run: arrival order (shared with staging_reports.seq) and the raw-line hash.
CREATE TABLE staging_seen (
  run_id        VARCHAR NOT NULL,
  seq           BIGINT NOT NULL,
  line_hash     BIGINT NOT NULL
);
