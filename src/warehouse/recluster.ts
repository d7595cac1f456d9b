import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * Rows sorted per statement at most: a slice's sort then needs the same memory at 1M reports as at 40M
 * (about one DuckDB row group and a half of full rows).
 */
const SLICE_ROWS = 200_000;

/** Fewer changed rows than one DuckDB vector are not worth a rewrite: any page reads their vector whole. */
const MIN_ROWS = 2_048;

/** Tests pass small values to rewrite a few rows in many slices. */
export interface ReclusterOptions {
  /** Fewest rows worth a rewrite (default {@link MIN_ROWS}). */
  minRows?: number | undefined;
  /** Rows per sorted slice (default {@link SLICE_ROWS}). */
  sliceRows?: number | undefined;
}

/**
 * Stores again, in `created_at` order, the rows of `report_rows` last changed after `since` (a TIMESTAMPTZ
 * as text): a run writes the reports it changes at the end of the table (row-rewrite.ts), so after many
 * nights those rows fill row groups that each span the whole `created_at` axis, and every list page scanned
 * all of them (`npm run bench:reader -- --nights 20`: ~2.3 × the CPU of a page at 1M). Once sorted, DuckDB's
 * zone maps let a page read only the part of them its time window covers. The serving split calls this for
 * the rows it stops reading from `reader_page_recent` (serving-recent.ts), so a row is rewritten about once
 * per share of the warehouse that changes, not every night.
 *
 * Same rows, same columns: copied sorted into a TEMP table in slices of {@link SLICE_ROWS} by `created_at`
 * (each slice's sort fits DuckDB's memory limit; a TEMP table spills to `temp_directory`), then deleted and
 * appended back in that order, all in the caller's transaction. Readers see the table before or after.
 *
 * @returns rows rewritten (0 when fewer than {@link MIN_ROWS})
 * @throws DuckDB errors as they are (the caller's transaction then rolls back)
 */
export async function reclusterChangedRows(
  c: DuckDBConnection,
  since: string,
  o: ReclusterOptions = {},
): Promise<number> {
  const params = { since };
  const changed = `report_rows WHERE last_changed_at > $since::TIMESTAMPTZ`;
  const n = Number(
    (await c.runAndReadAll(`SELECT count(*)::DOUBLE FROM ${changed}`, params)).getRows()[0]?.[0] ?? 0,
  );
  if (n === 0 || n < (o.minRows ?? MIN_ROWS)) return 0;
  const slices = Math.ceil(n / (o.sliceRows ?? SLICE_ROWS));
  // Slice bounds: `created_at` quantiles of the rows, so each slice holds about SLICE_ROWS (ties stay
  // together: a row goes to the slice whose lower bound it reaches).
  const bounds: (string | null)[] = [null];
  if (slices > 1) {
    const qs = Array.from({ length: slices - 1 }, (_, k) => ((k + 1) / slices).toFixed(6)).join(', ');
    const row = (
      await c.runAndReadAll(
        `SELECT list_transform(quantile_disc(created_at, [${qs}]), x -> x::VARCHAR) FROM ${changed}`,
        params,
      )
    ).getRows()[0];
    for (const b of (row?.[0] as { items: string[] } | undefined)?.items ?? []) bounds.push(b);
  }
  bounds.push(null);
  await c.run(`CREATE OR REPLACE TEMP TABLE recluster_rows AS SELECT * FROM report_rows LIMIT 0`);
  try {
    for (let k = 0; k + 1 < bounds.length; k++) {
      const lo = bounds[k] === null ? 'true' : `created_at >= $lo::TIMESTAMPTZ`;
      const hi = bounds[k + 1] === null ? 'true' : `created_at < $hi::TIMESTAMPTZ`;
      await c.run(
        `INSERT INTO recluster_rows SELECT * FROM ${changed} AND ${lo} AND ${hi} ORDER BY created_at, id`,
        {
          ...params,
          ...(bounds[k] === null ? {} : { lo: bounds[k]! }),
          ...(bounds[k + 1] === null ? {} : { hi: bounds[k + 1]! }),
        },
      );
    }
    await c.run(`DELETE FROM ${changed}`, params);
    // Appended in the TEMP table's order: DuckDB keeps insertion order (`preserve_insertion_order`).
    await c.run('INSERT INTO report_rows SELECT * FROM recluster_rows');
  } finally {
    await c.run('DROP TABLE IF EXISTS recluster_rows');
  }
  return n;
}
