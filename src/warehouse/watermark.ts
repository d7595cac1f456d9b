import type { DuckDBConnection } from '@duckdb/node-api';
import { ident, qualified, WATERMARK_TABLE } from './published-tables.js';

/**
 * Which warehouse state a published target holds: written by every publish into the target itself (the
 * copy's `publish_watermark` row, the Parquet set's `_publish.json`), so a target describes itself and the
 * next publish knows what to apply (change-set.ts). Counts are rows; times are ISO 8601 UTC strings with
 * microseconds (DuckDB's precision), so they compare exactly in SQL.
 */
export interface Watermark {
  /** Unique per publish: tells whether two targets (the copy, the Parquet set) hold the same publish. */
  publishId: string;
  /** The newest run applied (by start), or null before the first run. */
  lastRunId: string | null;
  /** `sync_runs` rows applied. */
  runs: number;
  /** The migrations of the warehouse, ascending, comma-separated: another schema needs a full publish. */
  schema: string;
  /** `report_versions_closed` rows applied: closed versions are only ever appended. */
  closedVersions: number;
  /** The latest `valid_to` among them (null when there are none): later ones are new. */
  closedUntil: string | null;
}

const ISO_US = `'%Y-%m-%dT%H:%M:%S.%fZ'`;

/**
 * The watermark of the live warehouse now (schema `main` of `connection`), for a publish named `publishId`.
 * Call between runs (the publish's caller guarantees no run writes meanwhile).
 */
export async function liveWatermark(connection: DuckDBConnection, publishId: string): Promise<Watermark> {
  const reader = await connection.runAndReadAll(
    `SELECT
       (SELECT run_id FROM main.sync_runs ORDER BY started_at DESC, run_id DESC LIMIT 1) AS last_run_id,
       (SELECT count(*) FROM main.sync_runs) AS runs,
       (SELECT string_agg(version::VARCHAR, ',' ORDER BY version) FROM main.schema_migrations) AS schema,
       (SELECT count(*) FROM main.report_versions_closed) AS closed_versions,
       (SELECT strftime(timezone('UTC', max(valid_to)), ${ISO_US}) FROM main.report_versions_closed) AS closed_until`,
  );
  const row = reader.getRowObjectsJS()[0] ?? {};
  return {
    publishId,
    lastRunId: row.last_run_id == null ? null : String(row.last_run_id),
    runs: Number(row.runs ?? 0),
    schema: String(row.schema ?? ''),
    closedVersions: Number(row.closed_versions ?? 0),
    closedUntil: row.closed_until == null ? null : String(row.closed_until),
  };
}

/** The watermark the copy attached as `database` records, or undefined when it has none (an older copy). */
export async function readWatermark(
  connection: DuckDBConnection,
  database: string,
): Promise<Watermark | undefined> {
  const exists = await connection.runAndReadAll(
    `SELECT count(*) AS n FROM duckdb_tables() WHERE database_name = $db AND schema_name = 'main' AND table_name = $t`,
    { db: database, t: WATERMARK_TABLE },
  );
  if (Number(exists.getRowObjectsJS()[0]?.n) === 0) return undefined;
  const reader = await connection.runAndReadAll(
    `SELECT publish_id, last_run_id, runs, schema, closed_versions,
       strftime(timezone('UTC', closed_until), ${ISO_US}) AS closed_until
     FROM ${qualified(database, WATERMARK_TABLE)}`,
  );
  const rows = reader.getRowObjectsJS();
  const row = rows[0];
  if (rows.length !== 1 || !row) return undefined;
  return {
    publishId: String(row.publish_id),
    lastRunId: row.last_run_id == null ? null : String(row.last_run_id),
    runs: Number(row.runs),
    schema: String(row.schema),
    closedVersions: Number(row.closed_versions),
    closedUntil: row.closed_until == null ? null : String(row.closed_until),
  };
}

/**
 * Writes `watermark` as the one row of the copy's `publish_watermark` table (created when missing), with
 * how the copy was made (`full` or `incremental`) and why a full publish was chosen.
 */
export async function writeWatermark(
  connection: DuckDBConnection,
  database: string,
  watermark: Watermark,
  how: { mode: 'full' | 'incremental'; reason: string | null },
): Promise<void> {
  const table = qualified(database, WATERMARK_TABLE);
  await connection.run(
    `CREATE TABLE IF NOT EXISTS ${table} (
       publish_id VARCHAR NOT NULL, last_run_id VARCHAR, runs BIGINT NOT NULL, schema VARCHAR NOT NULL,
       closed_versions BIGINT NOT NULL, closed_until TIMESTAMPTZ, published_at TIMESTAMPTZ NOT NULL,
       ${ident('mode')} VARCHAR NOT NULL, reason VARCHAR)`,
  );
  await connection.run(`DELETE FROM ${table}`);
  await connection.run(
    `INSERT INTO ${table} VALUES ($id, $last, $runs, $schema, $closed, $until::TIMESTAMPTZ, now(), $mode, $reason)`,
    {
      id: watermark.publishId,
      last: watermark.lastRunId,
      runs: watermark.runs,
      schema: watermark.schema,
      closed: watermark.closedVersions,
      until: watermark.closedUntil,
      mode: how.mode,
      reason: how.reason,
    },
  );
}
