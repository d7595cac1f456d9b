import type { DuckDBConnection } from '@duckdb/node-api';
import { BUSINESS } from './versions.js';

const COLUMNS = BUSINESS.split(', ');

/**
 * A report last written from CSV and now read from NDJSON with the same CSV projection: the same version,
 * seen with what CSV could not carry (numbers, booleans, objects instead of their cell text; `""` where
 * the cell was empty). Its row, which is also its current version (migration 011), takes the typed values
 * and hashes in place; no version is made, as nothing changed upstream.
 *
 * @param picked the `FROM … WHERE` clause of the staged rows to refine (built by merge.ts over `merge_batch`)
 * @param p the query parameters `run`, `now` (ISO time) and `source`
 */
export async function refine(c: DuckDBConnection, picked: string, p: Record<string, string>): Promise<void> {
  await c.run(
    `UPDATE reports SET ${COLUMNS.map((col) => `${col} = u.${col}`).join(', ')},
       content_hash = u.content_hash, csv_hash = u.csv_hash,
       line_hash = u.line_hash, last_seen_at = $now::TIMESTAMPTZ, source = $source, run_id = $run
     FROM (SELECT s.* ${picked}) AS u
     WHERE reports.id = u.id`,
    p,
  );
}
