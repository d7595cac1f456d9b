-- 004: `publish_refused` is unique on a hash of `row_key` instead of the key itself. A btree entry holds at
-- most ~2,700 bytes, and a refused row's key can be longer (the name of an unknown field, a `/stats` counter
-- name: neither has a length bound upstream), which made every publish fail on the refusal meant to keep
-- that row out. `row_key` keeps the whole key for operators.
ALTER TABLE publish_refused DROP CONSTRAINT publish_refused_pkey;
CREATE UNIQUE INDEX publish_refused_key ON publish_refused (table_name, md5(row_key));
