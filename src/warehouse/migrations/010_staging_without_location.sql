-- 010: a narrower staging row. Its location text ("line 12") is dropped: nothing reads it from the table
-- (a refused row's location comes from the batch file, refused-rows.ts; a reject's from the reject), and
-- writing it was ~4 % of each batch's load. From this version `csv_hash` is also NULL, in staging and in
-- `reports`, when it equals `content_hash` (most reports): the merge reads it as
-- coalesce(csv_hash, content_hash), so rows written before, which hold both, compare the same.
ALTER TABLE staging_reports DROP COLUMN location;
