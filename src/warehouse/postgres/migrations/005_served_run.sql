-- 005: the run whose data the reader serves: the last applied run that changed the reports (inserted,
-- updated, removed, revived or refined one), and when it finished. The reader's `ETag` and `Last-Modified`
-- come from it, as the DuckDB reader's do (a `/stats` snapshot or a run that changed nothing keeps every
-- client's cache valid). NULL until a publish writes it; the reader then falls back to `last_run_id`.
ALTER TABLE publish_state ADD COLUMN served_run_id text, ADD COLUMN served_at timestamptz;
