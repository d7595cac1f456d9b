import type { DuckDBConnection } from '@duckdb/node-api';
import { csvProjectionHash } from '../schema/csv-projection.js';
import { rowToReport } from '../schema/report-row.js';
import { contentHash } from '../schema/wire-format.js';

/** What {@link recomputeCsvHashes} did, in rows. */
export interface CsvHashUpgrade {
  /** Rows whose stored projection hash was read again. */
  checked: number;
  /** Rows whose projection hash changed. */
  changed: number;
  /** Rows left as they were because the report read back does not give its stored content hash. */
  skipped: number;
}

// Rows whose projection can differ from the report: only those are read (the rest keep csv_hash NULL).
const MAY_PROJECT = `extra IS NOT NULL OR category = '' OR description = '' OR address = ''
  OR contains(category, chr(13)) OR contains(description, chr(13)) OR contains(address, chr(13))`;
const COLUMNS = `status, destination, category, description, lat, lng, address,
  epoch_ms(created_at)::DOUBLE, epoch_ms(updated_at)::DOUBLE, extra::VARCHAR, content_hash, csv_hash`;

/**
 * Computes `csv_hash` again under the current CSV projection (schema/csv-projection.ts) for the stored
 * reports (the `reports` table, or `report_rows` once migration 020 made `reports` a view over it) and for
 * the staged rows of interrupted runs (`staging_reports`, which a resumed run merges), so hashes stored
 * under an earlier projection rule compare with new ones. Each report is rebuilt from its row and must give
 * back its stored `content_hash` (a row that does not is left as it is and counted in `skipped`). Call in
 * the migration's transaction. Reads the table in DuckDB chunks (2,048 rows); writes the changed hashes
 * through a temporary table and one `UPDATE`.
 */
export async function recomputeCsvHashes(connection: DuckDBConnection): Promise<CsvHashUpgrade> {
  const total: CsvHashUpgrade = { checked: 0, changed: 0, skipped: 0 };
  const rows = (
    await connection.runAndReadAll(
      `SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'report_rows' AND NOT temporary`,
    )
  ).getRowObjectsJS()[0]!;
  const stored = Number(rows.n) > 0 ? 'report_rows' : 'reports';
  for (const [table, key] of [
    [stored, 'id'],
    ['staging_reports', `run_id || chr(0) || seq::VARCHAR`],
  ] as const) {
    const done = await recompute(
      connection,
      table,
      key,
      `${key.replace(/\b(id|run_id|seq)\b/g, `${table}.$1`)} = u.k`,
    );
    total.checked += done.checked;
    total.changed += done.changed;
    total.skipped += done.skipped;
  }
  return total;
}

/** Recomputes one table's hashes; `key` identifies a row as text, `match` ties a row to `u.k`. */
async function recompute(
  c: DuckDBConnection,
  table: 'reports' | 'report_rows' | 'staging_reports',
  key: string,
  match: string,
): Promise<CsvHashUpgrade> {
  await c.run('CREATE OR REPLACE TEMP TABLE csv_hash_upgrade (k VARCHAR, h VARCHAR)');
  const appender = await c.createAppender('csv_hash_upgrade');
  const done: CsvHashUpgrade = { checked: 0, changed: 0, skipped: 0 };
  try {
    const result = await c.stream(`SELECT ${key} AS k, id, ${COLUMNS} FROM ${table} WHERE ${MAY_PROJECT}`);
    for (
      let chunk = await result.fetchChunk();
      chunk && chunk.rowCount > 0;
      chunk = await result.fetchChunk()
    ) {
      for (const row of chunk.getRows()) {
        done.checked++;
        // `k`, then the columns rowToReport reads (schema/report-row.ts), then the two hashes.
        const report = rowToReport(row.slice(1));
        const stored = row[12] as string;
        if (contentHash(report) !== stored) {
          done.skipped++;
          continue;
        }
        const projected = csvProjectionHash(report, stored);
        const hash = projected === stored ? null : projected;
        if (hash === ((row[13] as string | null) ?? null)) continue;
        done.changed++;
        appender.appendVarchar(row[0] as string);
        if (hash === null) appender.appendNull();
        else appender.appendVarchar(hash);
        appender.endRow();
      }
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
  if (done.changed > 0) {
    await c.run(`UPDATE ${table} SET csv_hash = u.h FROM csv_hash_upgrade u WHERE ${match}`);
  }
  await c.run('DROP TABLE csv_hash_upgrade');
  return done;
}
