-- 014: the CSV projection (schema/csv-projection.ts) compares what a CSV cell can say, whoever wrote it:
-- `""` and null are one, numbers by value (1, 1.0, 1e0), booleans as True/true, JSON cells by value (key
-- order, white space). Every stored `csv_hash` is computed again under that rule by the migration's data
-- step (warehouse/csv-hash-upgrade.ts, run after this statement in the same transaction), so a warehouse
-- upgraded to it makes no version out of hashes taken under the former rule.
SELECT 1;
