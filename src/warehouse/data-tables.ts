import type { DuckDBConnection } from '@duckdb/node-api';
import { RunLog } from './runs.js';
import { withTransaction } from './transaction.js';

/**
 * The warehouse's data tables: what the upstream's records became (current reports, their closed SCD2
 * versions, the data-quality flags of those versions), the reader's serving index derived from them
 * (warehouse/serving-index.ts: emptied, it is rebuilt when the warehouse is next opened or by the next run
 * that changes reports; meanwhile the reader pages with OFFSET) and the working tables of runs under way
 * (staging, checkpoints). `reports-sync reset` empties exactly these; the one list to extend when a table of data is
 * added (a base table under a view, a serving index of the reader). Views over them need no entry.
 */
export const DATA_TABLES = [
  'report_rows',
  'report_versions_closed',
  'data_quality_flags',
  'reader_page_counts',
  'reader_extra_keys',
  'reader_serving',
  'reader_page_recent',
  'reader_sorted_runs',
  'reader_sort_pending',
  'staging_reports',
  'staging_seen',
  'sync_checkpoints',
] as const;

/**
 * What a reset keeps: the run log and what runs recorded about themselves and the upstream — quarantined
 * records (evidence of each run), schema drift and its catalog (so a reload is not reported as drift),
 * `/stats` snapshots, alerts and their deliveries — and the schema's version.
 */
export const KEPT_TABLES = [
  'sync_runs',
  'rejected_records',
  'drift_events',
  'drift_catalog',
  'stats_snapshots',
  'stats_values',
  'alert_events',
  'alert_deliveries',
  'schema_migrations',
] as const;

/** Rows of each table of `tables` the database has (a table it lacks is left out). */
export async function tableRows(
  connection: DuckDBConnection,
  tables: readonly string[],
): Promise<{ table: string; rows: number }[]> {
  const present = new Set(
    (await connection.runAndReadAll(`SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'`))
      .getRowObjectsJS()
      .map((r) => String(r.table_name)),
  );
  const out: { table: string; rows: number }[] = [];
  for (const table of tables.filter((t) => present.has(t))) {
    const [row] = (
      await connection.runAndReadAll(`SELECT count(*)::DOUBLE AS n FROM "${table}"`)
    ).getRowObjectsJS();
    out.push({ table, rows: Number(row?.n ?? 0) });
  }
  return out;
}

/** What {@link resetData} did. */
export interface ResetResult {
  /** The run-log row that records the reset (job and source `reset`). */
  runId: string;
  /** Rows deleted per data table. */
  emptied: { table: string; rows: number }[];
}

/**
 * A full refresh: empties every table of {@link DATA_TABLES} and records the reset as a succeeded run of
 * job and source `reset` whose `note` lists what was emptied, in one transaction (all or nothing), then
 * checkpoints so the file gives back the space. The run log and {@link KEPT_TABLES} stay.
 *
 * @throws what DuckDB throws (nothing is deleted then)
 */
export async function resetData(connection: DuckDBConnection, now: Date = new Date()): Promise<ResetResult> {
  let runId = '';
  const emptied = await withTransaction(connection, async (c) => {
    const counts = await tableRows(c, DATA_TABLES);
    for (const { table } of counts) await c.run(`DELETE FROM "${table}"`);
    const note = `full refresh: emptied ${counts.map((t) => `${t.table} (${t.rows} rows)`).join(', ')}; the run log is kept`;
    runId = await RunLog.recordReset(c, now, note);
    return counts;
  });
  await connection.run('CHECKPOINT');
  return { runId, emptied };
}

/** SQL: the start of the last reset, or -infinity (for conditions on the runs after it). */
export const LAST_RESET_SQL = `(SELECT coalesce(max(started_at), '-infinity'::TIMESTAMPTZ) FROM sync_runs WHERE source = 'reset')`;
