-- 002: resume of paged exports (docs/how-a-sync-works.md: a checkpoint row per committed page/batch allows resume).
-- A CSV run killed mid-export leaves its staging and page checkpoints; the next CSV run with the same upstream,
-- page size and export validator (ETag/Last-Modified of page 1) adopts them and goes on from the next page.

ALTER TABLE sync_runs ADD COLUMN page_size INTEGER;            -- rows per page asked of a paged export
ALTER TABLE sync_runs ADD COLUMN resumed_from_run VARCHAR;     -- the interrupted run whose pages this run adopted
ALTER TABLE sync_runs ADD COLUMN resumed_at_page INTEGER;      -- first page this run fetched itself after adopting
