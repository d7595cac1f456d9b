import { escapeIdentifier } from 'pg';
import { copyTable, createTempLike, upsertRefused, type PublishEnds } from './copy-table.js';
import type { TableCounts } from './apply-full.js';
import { copyIntoSql, csvLineSql, rowKeySql, streamCopy } from './copy-lines.js';
import {
  REPORT_ROWS,
  RUN_SCOPED,
  SYNC_RUNS,
  VERSIONS_CLOSED,
  type PgColumn,
  type PgTable,
} from './pg-tables.js';

/** Where the last publish left PostgreSQL (its `publish_state` row), as UTC text with microseconds. */
export interface AppliedState {
  /** The latest merge time applied: rows stamped after it are the change set. */
  watermark: string;
  /** The latest run start applied: runs started after it are new. */
  runsStartedMax: string;
}

/**
 * DuckDB SQL: a report row changed after `$since`. Every change a merge makes to a stored row stamps the
 * run's merge time (warehouse/merge-time.ts) on one of these columns: a new or changed version
 * (`last_changed_at`), a tombstone (`removed_at`), a report seen again (`last_seen_at`), one a full export
 * missed (`unseen_since`).
 */
const REPORT_CHANGED = `greatest(last_changed_at, last_seen_at, coalesce(removed_at, last_changed_at),
  coalesce(unseen_since, last_changed_at)) > $since::TIMESTAMPTZ`;

/** The DuckDB temp table of the changed report rows (one publish at a time per connection). */
const CHANGED = 'pg_publish_changed_reports';

/**
 * Applies the change set since `state` inside the caller's transaction (docs/deployment.md, "Serving from
 * PostgreSQL"): the runs started since (and those still running then), their rejects, stats and drift; the
 * reports changed since, upserted; the versions closed since. Each step first removes what an earlier
 * attempt of the same change set wrote, so applying it twice changes nothing. Returns the rows moved.
 */
export async function applyChanges(ends: PublishEnds, state: AppliedState): Promise<TableCounts> {
  const counts: TableCounts = {};
  const runs = await movedRuns(ends, state);
  const byRun = {
    where: `run_id IN (SELECT unnest(from_json($runs, '["VARCHAR"]')))`,
    params: { runs: JSON.stringify(runs) },
  };
  for (const table of [SYNC_RUNS, ...RUN_SCOPED]) {
    await ends.pg.query(`DELETE FROM ${escapeIdentifier(table.name)} WHERE run_id = ANY($1)`, [runs]);
    await forgetRefused(ends, table, 'run_id = ANY($2)', [runs]);
    counts[table.name] = await copyTable(ends, table, byRun, escapeIdentifier(table.name));
  }
  const since = { where: '', params: { since: state.watermark } };
  await ends.pg.query(`DELETE FROM report_versions_closed WHERE valid_to > $1::timestamptz`, [
    state.watermark,
  ]);
  counts[VERSIONS_CLOSED.name] = await copyTable(
    ends,
    VERSIONS_CLOSED,
    { ...since, where: `valid_to > $since::TIMESTAMPTZ` },
    'report_versions_closed',
  );
  counts[REPORT_ROWS.name] = await upsertReports(ends, state.watermark);
  await upsertRefused(ends.pg);
  return counts;
}

/** The runs to move: started after the last publish's latest start, or running at the last publish. */
async function movedRuns(ends: PublishEnds, state: AppliedState): Promise<string[]> {
  const open = await ends.pg.query<{ run_id: string }>(
    `SELECT run_id FROM sync_runs WHERE status = 'running'`,
  );
  const reader = await ends.duck.runAndReadAll(
    `SELECT run_id FROM sync_runs
     WHERE started_at > $started::TIMESTAMPTZ OR status = 'running'
        OR run_id IN (SELECT unnest(from_json($open, '["VARCHAR"]')))`,
    { started: state.runsStartedMax, open: JSON.stringify(open.rows.map((r) => r.run_id)) },
  );
  return reader.getRowObjectsJS().map((r) => String(r.run_id));
}

/** Removes the refusals of `table` matching `where` (over publish_refused, `$1` = the table's name). */
async function forgetRefused(
  ends: PublishEnds,
  table: PgTable,
  where: string,
  params: unknown[],
): Promise<void> {
  await ends.pg.query(`DELETE FROM publish_refused WHERE table_name = $1 AND ${where}`, [
    table.name,
    ...params,
  ]);
}

/**
 * The changed reports: copied into a temp table, then `INSERT … ON CONFLICT (id) DO UPDATE`; a report
 * whose new version PostgreSQL cannot store is deleted there (and listed in `publish_refused`), one whose
 * refused version was replaced by a storable one loses its refusal.
 */
async function upsertReports(ends: PublishEnds, watermark: string) {
  // One scan of the reports: the changed rows set apart in a DuckDB temp table that the three copies read.
  await ends.duck.run(
    `CREATE OR REPLACE TEMP TABLE ${CHANGED} AS SELECT * FROM report_rows WHERE ${REPORT_CHANGED}`,
    {
      since: watermark,
    },
  );
  const all = { where: 'true', params: {} };
  await ends.pg.query(`CREATE TEMP TABLE report_keys_changed (row_key text, id text) ON COMMIT DROP`);
  const keyColumns: PgColumn[] = [
    { name: 'row_key', type: 'text' },
    { name: 'id', type: 'text' },
  ];
  await streamCopy(
    ends.duck,
    `SELECT ${csvLineSql(keyColumns)} FROM (
       SELECT ${rowKeySql(REPORT_ROWS)} AS row_key, CASE WHEN contains(id, chr(0)) THEN NULL ELSE id END AS id
       FROM ${CHANGED})`,
    all.params,
    ends.pg,
    copyIntoSql('report_keys_changed', keyColumns),
  );
  // Statistics of the temp table, so that a small change set is joined by index, not by a scan.
  await ends.pg.query('ANALYZE report_keys_changed');
  await forgetRefused(ends, REPORT_ROWS, 'row_key IN (SELECT row_key FROM report_keys_changed)', []);
  const temp = await createTempLike(ends.pg, REPORT_ROWS);
  const counts = await copyTable(ends, REPORT_ROWS, all, temp, CHANGED);
  await ends.pg.query(`ANALYZE ${temp}`);
  const columns = REPORT_ROWS.columns.map((c) => escapeIdentifier(c.name));
  const updates = columns.filter((c) => c !== '"id"').map((c) => `${c} = EXCLUDED.${c}`);
  await ends.pg.query(
    `INSERT INTO report_rows (${columns.join(', ')}) SELECT ${columns.join(', ')} FROM ${temp}
     ON CONFLICT (id) DO UPDATE SET ${updates.join(', ')}`,
  );
  // Reports whose new version was refused: their old row would be stale.
  await ends.pg.query(
    `DELETE FROM report_rows r USING report_keys_changed k
     WHERE r.id = k.id AND NOT EXISTS (SELECT 1 FROM ${temp} n WHERE n.id = k.id)`,
  );
  await ends.duck.run(`DROP TABLE ${CHANGED}`);
  return counts;
}
