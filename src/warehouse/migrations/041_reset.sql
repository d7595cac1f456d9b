-- 041: a full refresh (`reports-sync reset`) is recorded in the run log as a run of its own (job and source
-- `reset`), whose `note` says what it emptied: readers' validators change with it, the conditional request
-- and the daemon's catch-up ignore the runs before it, and a publish after it knows to publish in full.
ALTER TABLE sync_runs ADD COLUMN note VARCHAR;
