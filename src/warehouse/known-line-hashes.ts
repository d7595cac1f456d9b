import type { DuckDBConnection } from '@duckdb/node-api';
import { KnownLines } from '../normalize/known-lines.js';
import { DEFAULT_EXTRA_LIMITS, type ExtraLimits } from '../schema/value-rules.js';
import { lineHashColumn } from './line-hash-column.js';
import { withTransaction } from './transaction.js';

/** Rows read per query: 8 row groups of 122,880 rows (~8 MiB of hashes materialised at a time). */
const SLICE_ROWS = 8 * 122_880;

/**
 * Loads the raw-line hashes of the warehouse's current (not tombstoned) reports for `source` (the column
 * {@link lineHashColumn} names) into a {@link KnownLines} set, so a re-sync skips unchanged lines before
 * parsing them. Call once at the start of a run, which holds the warehouse's one writer until its merge: the
 * set is then the current reports' hashes when the merge asks it which were not read (`trackSeen`,
 * merge-seen.ts).
 *
 * The set is built in two passes over the hashes (KnownLines.build), each read in slices of row ids, so
 * DuckDB skips the row groups outside a slice and holds one slice's result at a time, whatever the
 * warehouse's size; both passes read one snapshot (a transaction). A slice's result is materialised: a
 * streamed one computes each 2,048-row chunk on request, one round trip to DuckDB's thread per chunk (~35 %
 * slower for 1M hashes). Sorting the hashes in DuckDB instead (one slice per hash range, 10 scans at 10M)
 * took 5 s and 517 MiB of peak RSS at 10M reports, one `ORDER BY` ran out of memory; these two passes take
 * ~2 s and ~330 MiB (measured).
 *
 * `limits` are the run's unknown-field limits (`REPORTS_EXTRA_MAX_*`), part of every line hash the set checks.
 *
 * `afterSlice` runs after each slice's hashes are visited (the sync evicts the blocks the slice read there:
 * DuckDB would otherwise keep the whole column cached next to the set).
 */
export async function loadKnownLines(
  connection: DuckDBConnection,
  source: string,
  trackSeen = false,
  afterSlice?: () => Promise<void>,
  limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
): Promise<KnownLines> {
  const column = lineHashColumn(source);
  const where = `${column} IS NOT NULL AND removed_at IS NULL`;
  return withTransaction(connection, async (c) => {
    const row = (
      await c.runAndReadAll(
        `SELECT count(*) FILTER (WHERE ${where})::DOUBLE AS n, coalesce(max(rowid), -1)::DOUBLE AS last
         FROM report_rows`,
      )
    ).getRowObjectsJS()[0]!;
    const last = Number(row.last);
    return KnownLines.build(
      source,
      Number(row.n),
      async (visit) => {
        for (let from = 0; from <= last; from += SLICE_ROWS) {
          const result = await c.run(
            `SELECT (${column} >> 32)::INTEGER AS hi,
             ((${column} & 4294967295) - CASE WHEN ${column} & 2147483648 <> 0 THEN 4294967296 ELSE 0 END)::INTEGER AS lo
           FROM report_rows WHERE ${where} AND rowid >= ${from} AND rowid < ${from + SLICE_ROWS}`,
          );
          for (;;) {
            const chunk = await result.fetchChunk();
            // Read once: `rowCount` calls into the binding each time (a loop bound on it cost ~0.2 s per 1M hashes).
            const rows = chunk?.rowCount ?? 0;
            if (!chunk || rows === 0) break;
            const hi = chunk.getColumnVector(0);
            const lo = chunk.getColumnVector(1);
            for (let i = 0; i < rows; i++) visit(hi.getItem(i) as number, lo.getItem(i) as number);
          }
          await afterSlice?.();
        }
      },
      trackSeen,
      limits,
    );
  });
}
