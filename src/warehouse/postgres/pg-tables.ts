/**
 * The column types a DuckDB table has as a PostgreSQL serving table (docs/deployment.md, "Serving from
 * PostgreSQL"): `text`, `jsonb`, `json` (text kept as given), `timestamptz`, `double precision`, `bigint`,
 * `integer`, `boolean`.
 */
export type PgColumnType =
  'text' | 'jsonb' | 'json' | 'timestamptz' | 'double' | 'bigint' | 'integer' | 'boolean';

/**
 * One column of a published table: its PostgreSQL name and type, and `from`, the DuckDB column it is read
 * from when that has another name (the same DuckDB column may feed two PostgreSQL columns).
 */
export interface PgColumn {
  name: string;
  type: PgColumnType;
  from?: string;
}

/** The DuckDB column a published column is read from: its `from`, else its own name. */
export function duckSource(column: PgColumn): string {
  return column.from ?? column.name;
}

/**
 * One DuckDB table published to PostgreSQL under the same name, with the columns analysts read (internal
 * change-detection hashes are left out). `key` names a row in the refusal table (`publish_refused`);
 * `runColumn` names the run that wrote the row.
 */
export interface PgTable {
  name: string;
  columns: readonly PgColumn[];
  key: readonly string[];
  runColumn: string;
}

/** Columns from `name:type` pairs; `name:type:from` reads the DuckDB column `from`. */
const cols = (spec: string): PgColumn[] =>
  spec
    .trim()
    .split(/\s+/)
    .map((pair) => {
      const [name, type, from] = pair.split(':') as [string, PgColumnType, string | undefined];
      return from === undefined ? { name, type } : { name, type, from };
    });

const BUSINESS =
  'status:text destination:text category:text description:text lat:double lng:double address:text ' +
  'created_at:timestamptz updated_at:timestamptz extra:jsonb';

/** The run log: every run, its counters and outcome (migration 001 of the warehouse and later ones). */
export const SYNC_RUNS: PgTable = {
  name: 'sync_runs',
  key: ['run_id'],
  runColumn: 'run_id',
  columns: cols(`run_id:text job:text source:text status:text started_at:timestamptz finished_at:timestamptz
    upstream_url:text export_etag:text export_last_modified:text attempts:integer records_read:bigint
    records_loaded:bigint records_rejected:bigint duplicates:bigint inserted:bigint updated:bigint
    unchanged:bigint removed:bigint revived:bigint bytes_read:bigint pages:integer complete:boolean
    tombstones_note:text stats_total_upstream:bigint stats_total_warehouse:bigint stats_total_diff:bigint
    error:jsonb page_size:integer resumed_from_run:text resumed_at_page:integer bytes_wire:bigint
    not_modified:boolean outcome:text refined:bigint quality_flags:bigint seen_all_at:timestamptz
    merged_at:timestamptz note:text`),
};

/**
 * The stored report rows under the `reports` view (one per report, its current version). `extra_json` is
 * DuckDB's `extra` once more, as `json`: its text as received (key order, number text), which the reader
 * serves; `extra` stays `jsonb` for analysts.
 */
export const REPORT_ROWS: PgTable = {
  name: 'report_rows',
  key: ['id'],
  runColumn: 'version_run_id',
  columns: cols(`id:text ${BUSINESS} first_seen_at:timestamptz last_seen_at:timestamptz
    last_changed_at:timestamptz removed_at:timestamptz source:text run_id:text version_change:text
    version_run_id:text unseen_since:timestamptz extra_json:json:extra`),
};

/** SCD2 versions a later run closed (`valid_to` = that run's merge time). */
export const VERSIONS_CLOSED: PgTable = {
  name: 'report_versions_closed',
  key: ['id', 'valid_from'],
  runColumn: 'run_id',
  columns: cols(`id:text valid_from:timestamptz valid_to:timestamptz change:text ${BUSINESS} run_id:text`),
};

/** Tables whose rows belong to one run and are written while it runs (moved by run). */
export const RUN_SCOPED: readonly PgTable[] = [
  {
    name: 'rejected_records',
    key: ['run_id', 'location'],
    runColumn: 'run_id',
    columns: cols(`run_id:text source:text location:text line:bigint page:integer row:bigint record_id:text
      raw:text raw_truncated:boolean raw_bytes:bigint issues:jsonb rejected_at:timestamptz raw_encoding:text`),
  },
  {
    name: 'stats_snapshots',
    key: ['run_id', 'source', 'taken_at'],
    runColumn: 'run_id',
    columns: cols('taken_at:timestamptz run_id:text source:text body:json'),
  },
  {
    name: 'stats_values',
    key: ['run_id', 'source', 'metric'],
    runColumn: 'run_id',
    columns: cols('taken_at:timestamptz run_id:text source:text metric:text value:double'),
  },
  {
    name: 'drift_events',
    key: ['run_id', 'source', 'kind', 'field', 'value'],
    runColumn: 'run_id',
    columns: cols(
      'run_id:text source:text kind:text field:text value:text first_seen:timestamptz count:bigint',
    ),
  },
];

/** Every published table, in the order a full publish copies them. */
export const PUBLISHED_TABLES: readonly PgTable[] = [SYNC_RUNS, REPORT_ROWS, VERSIONS_CLOSED, ...RUN_SCOPED];
