-- 012: `sync_runs.refined`, the reports a run rewrote in place without a new version: an NDJSON row whose
-- CSV projection equals that of a report last written from CSV carries typed values where the CSV row had
-- text (`extra` numbers and booleans). Their business content is unchanged, so no SCD2 version is written,
-- but what the reader serves changed: the reader's validators and the daemon's publishing key on it.
ALTER TABLE sync_runs ADD COLUMN refined BIGINT DEFAULT 0;
