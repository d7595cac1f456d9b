-- 040: alerts (docs/deployment.md, "Alerts"). Every alert event the sync raised, and every delivery of one
-- to a webhook. An incident (a job whose runs fail, a job past its freshness objective, a gap between the
-- upstream /stats total and the warehouse, a publish target behind) opens once and resolves once; a notice
-- (schema drift, data-quality flags of a run) is told once and has no resolve.
CREATE TABLE alert_events (
  event_id  VARCHAR NOT NULL,                   -- unique, sortable by time; the webhook-id of its deliveries
  type      VARCHAR NOT NULL,                   -- run.failed | run.recovered | drift.detected | freshness.breached | …
  incident  VARCHAR NOT NULL,                   -- what it is about: run:<job>, freshness:<job>, reconciliation, publish:<target>, drift:<run>, quality:<run>
  state     VARCHAR NOT NULL,                   -- open | resolved | notice
  job       VARCHAR,
  run_id    VARCHAR,
  summary   VARCHAR NOT NULL,                   -- one sentence a person reads
  figures   JSON NOT NULL,                      -- the numbers behind it
  raised_at TIMESTAMPTZ NOT NULL
);

-- One row per (event, webhook endpoint): where its delivery stands.
CREATE TABLE alert_deliveries (
  event_id     VARCHAR NOT NULL,
  endpoint     VARCHAR NOT NULL,                -- the webhook URL with its secret parts redacted
  endpoint_key VARCHAR NOT NULL,                -- a hash of the whole URL: which configured webhook it is
  status       VARCHAR NOT NULL,                -- pending | delivered | failed
  attempts     INTEGER NOT NULL,
  status_code  INTEGER,                         -- HTTP status of the last attempt
  last_error   VARCHAR,
  updated_at   TIMESTAMPTZ NOT NULL
);
