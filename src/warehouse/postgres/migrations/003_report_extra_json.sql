-- 003: `extra` once more as `json`, which keeps the text as given: the upstream's unknown fields in the order
-- received, numbers as written (`1.0`, `1e2`). `extra` stays `jsonb` for analysts (it reorders keys, shorter
-- first, and normalises numbers). The reader serves `extra_json`; rows published before this migration have
-- NULL there, and the reader falls back to `extra` for them until a publish rewrites them
-- (`publish-postgres --full` rewrites every row). See docs/deployment.md, "Serving from PostgreSQL".
ALTER TABLE report_rows ADD COLUMN extra_json json;
