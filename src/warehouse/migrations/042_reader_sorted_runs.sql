-- 042: the sorted runs of `report_rows` (warehouse/sorted-runs.ts). Each move of the serving split stores
-- the rows changed since the previous split again sorted by `created_at` at the end of the table: a sorted
-- run, which every list page reads a part of. A run holds the rows last changed after its `starts_after`
-- and at or before the next run's (or the split); the rows before the first run are the base. Kept so a
-- move can merge runs and their number stays small. Empty on a warehouse migrated to it: what earlier moves
-- sorted counts as the base. Not in the published copy (its `report_rows` lies in another order).
CREATE TABLE reader_sorted_runs (
  starts_after TIMESTAMPTZ NOT NULL
);

-- The sort a move of the split left to do, carried out in slices of rows once the run commits
-- (warehouse/recluster.ts): rows last changed after `since` and at or before `until`, those created before
-- `done_before` done. At most one row; a crash between slices leaves it for the next run.
CREATE TABLE reader_sort_pending (
  since        TIMESTAMPTZ NOT NULL,
  until        TIMESTAMPTZ NOT NULL,
  done_before  TIMESTAMPTZ
);
