import type { DuckDBConnection } from '@duckdb/node-api';
import { columnList, currentDatabase, ident, literal, publishedColumns } from './published-tables.js';
import type { Watermark } from './watermark.js';

/**
 * The change set of a publish: what the live warehouse changed since the state a published target holds
 * (its {@link Watermark}), per table, so a publish applies that instead of rewriting every row
 * (docs/deployment.md, "How a publish applies a run's changes"). Targets: the DuckDB copy and the Parquet
 * set (publish.ts); any other target (e.g. a PostgreSQL database) can apply the same statements.
 *
 * What makes a change set complete, per table:
 * - `sync_runs` and the run-scoped tables ({@link RUN_SCOPED_TABLES}): a run's rows are written by that
 *   run only (quarantine, stats, drift events), except a resumed run, which adopts the rows of the run it
 *   resumes (`resumed_from_run`). The runs of the change set are those whose `sync_runs` row the target
 *   does not hold as it is now, plus the runs they resumed; their rows are replaced.
 * - `report_rows` (the stored rows under the `reports` view, migration 020): every statement that writes a
 *   row sets its `run_id` to the writing run (merge.ts, merge-seen.ts, tombstones.ts), and every new version
 *   sets `version_run_id`, except one: a full export run that did not see a current report marks it
 *   `unseen_since` its merge time and stores the `last_seen_at`/`run_id` the view showed (an older run's).
 *   So the changed rows are those whose `run_id` is a run of the change set or whose `unseen_since` is the
 *   `seen_all_at` of one; they are replaced whole. Those whose version is older were only seen or refined
 *   (`extra`, `source`): their version did not change.
 * - the `reports` view lifts `last_seen_at`/`run_id` of every current report not marked unseen to the
 *   latest run that recorded `sync_runs.seen_all_at` (a nightly full export, a 304): a target holding
 *   `report_rows`, `sync_runs` and the view (the DuckDB copy) gets that lift with the run's one `sync_runs`
 *   row; a target holding the view's rows (the Parquet set's `reports`) must rewrite them all
 *   ({@link ChangeSet.lifted}).
 * - `report_versions_closed`: only ever appended, each closed version's `valid_to` later than every
 *   earlier one (merge-time.ts): the new ones are those after the watermark's `closedUntil`.
 * - any other table: small, replaced whole.
 * A migration, a target with runs the warehouse does not have (another warehouse), a reset among the runs
 * (`reports-sync reset` emptied the data tables: nothing names the rows it deleted), closed versions that
 * are not the target's plus new ones, or a change to most reports (rewriting the table is cheaper than
 * replacing its rows): no change set, a full publish.
 */

/** TEMP table (of the publishing connection) with the run ids of the change set. */
export const CHANGE_RUNS = 'publish_change_runs';

/** TEMP table with the changed `report_rows`, their published columns as the live warehouse holds them now. */
export const CHANGED_REPORTS = 'publish_changed_reports';

/**
 * By default a change set holding more than this share of the reports is not built: a full publish of
 * the DuckDB copy writes the table once, where replacing its rows reads and writes it more than once (4M
 * reports, every one changed: 26 s to replace them in the previous copy against 22 s for the whole copy,
 * measured). Another target may weigh it otherwise ({@link PlanOptions}).
 */
export const FULL_SHARE = 0.25;

/** Options of {@link planChangeSet}. */
export interface PlanOptions {
  /** Past this share of the reports changed (0–1), no change set: a full publish (default {@link FULL_SHARE}). */
  fullShare?: number;
}

/** Tables whose rows each belong to one run through `run_id`. */
export const RUN_SCOPED_TABLES: readonly string[] = [
  'sync_runs',
  'rejected_records',
  'stats_snapshots',
  'stats_values',
  'drift_events',
  'data_quality_flags',
];

/** How a change set carries a table: see the module comment. */
export type TablePolicy = 'reports' | 'appended' | 'by-run' | 'whole';

/** The policy of a live table. */
export function tablePolicy(table: string): TablePolicy {
  if (table === 'report_rows') return 'reports';
  if (table === 'report_versions_closed') return 'appended';
  return RUN_SCOPED_TABLES.includes(table) ? 'by-run' : 'whole';
}

/** What a target holds, as {@link planChangeSet} needs it. */
export interface PublishedState {
  /** Its watermark, or undefined when it records none. */
  watermark: Watermark | undefined;
  /** A SQL relation, readable on the publishing connection, holding the target's `sync_runs` rows. */
  runs: string;
}

/**
 * The change set since a target's watermark: its run ids in the TEMP table {@link CHANGE_RUNS}, its
 * reports in {@link CHANGED_REPORTS}.
 */
export interface ChangeSet {
  runIds: string[];
  /** Reports changed since the watermark (rows of {@link CHANGED_REPORTS}). */
  changedReports: number;
  /**
   * A run of the change set recorded `seen_all_at`: the `reports` view's `last_seen_at`/`run_id` of every
   * current report not marked unseen moved to it, though no stored row changed for it.
   */
  lifted: boolean;
  /** Of them, those with a new version (the others were only seen or refined). */
  newVersions: number;
  /** A run of the change set refined reports: their current version's `extra` changed in place. */
  refined: boolean;
  /** Closed versions appended since the watermark: those with `valid_to` after `closedAfter`. */
  appendedVersions: number;
  closedAfter: string | null;
}

/** A change set to apply, or why the target must be rewritten whole. */
export type ChangeSetPlan = { kind: 'incremental'; changes: ChangeSet } | { kind: 'full'; reason: string };

/**
 * Decides how to bring a target from its watermark to the live warehouse (schema `main`) and, when a
 * change set can do it, builds it: fills {@link CHANGE_RUNS} and counts the rows to apply. Call between
 * runs, on the connection that then reads the change set's rows.
 *
 * @param live the live warehouse's watermark now ({@link liveWatermark})
 */
export async function planChangeSet(
  connection: DuckDBConnection,
  target: PublishedState,
  live: Watermark,
  options: PlanOptions = {},
): Promise<ChangeSetPlan> {
  const from = target.watermark;
  if (!from) return { kind: 'full', reason: 'the published copy records no watermark' };
  if (from.schema !== live.schema) {
    return {
      kind: 'full',
      reason: `the warehouse schema changed (migrations ${from.schema} → ${live.schema})`,
    };
  }
  const one = async (sql: string, params: Record<string, string | number | null> = {}) =>
    (await connection.runAndReadAll(sql, params)).getRowObjectsJS()[0] ?? {};
  const foreign = await one(
    `SELECT count(*) AS n, min(run_id) AS example FROM ${target.runs}
     WHERE run_id NOT IN (SELECT run_id FROM main.sync_runs)`,
  );
  if (Number(foreign.n) > 0) {
    return {
      kind: 'full',
      reason: `the published copy holds ${Number(foreign.n)} runs this warehouse does not (e.g. ${String(foreign.example)}): another or a reset warehouse`,
    };
  }
  const closed = await one(
    `SELECT count(*) AS n FROM main.report_versions_closed
     WHERE $until::TIMESTAMPTZ IS NOT NULL AND valid_to <= $until::TIMESTAMPTZ`,
    { until: from.closedUntil },
  );
  if (Number(closed.n) !== from.closedVersions) {
    return {
      kind: 'full',
      reason: `the published closed versions (${from.closedVersions}) are not those of the warehouse up to their time (${Number(closed.n)})`,
    };
  }
  const runIds = await changedRuns(connection, target);
  const reset = await one(
    `SELECT min(run_id) AS reset_run FROM main.sync_runs WHERE source = 'reset' AND run_id IN ${IN_CHANGE}`,
  );
  if (reset.reset_run != null) {
    return {
      kind: 'full',
      reason: `the warehouse was reset since the last publish (run ${String(reset.reset_run)} emptied its data tables)`,
    };
  }
  const where = await changedWhere(connection, runIds);
  const counts = await one(
    `SELECT (SELECT count(*) FROM main.report_rows WHERE ${where}) AS changed,
       (SELECT count(*) FROM main.report_rows) AS reports`,
  );
  const [changed, reports] = [Number(counts.changed), Number(counts.reports)];
  if (changed > (options.fullShare ?? FULL_SHARE) * reports && reports >= FULL_MIN_REPORTS) {
    return {
      kind: 'full',
      reason: `${changed} of ${reports} reports changed since the last publish: writing them whole is cheaper`,
    };
  }
  return { kind: 'incremental', changes: await buildChangeSet(connection, from, runIds, where) };
}

/** Small warehouses always get their change set (cheap either way): what small tests exercise. */
const FULL_MIN_REPORTS = 100_000;

/**
 * Fills {@link CHANGE_RUNS}: runs whose `sync_runs` row the target does not hold as it is, and those they
 * resumed. Returns their ids.
 */
async function changedRuns(connection: DuckDBConnection, target: PublishedState): Promise<string[]> {
  const columns = columnList(
    await publishedColumns(connection, await currentDatabase(connection), 'sync_runs'),
  );
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${CHANGE_RUNS} AS
     WITH differ AS (SELECT ${columns} FROM main.sync_runs EXCEPT SELECT ${columns} FROM ${target.runs})
     SELECT run_id FROM differ
     UNION SELECT resumed_from_run FROM differ WHERE resumed_from_run IS NOT NULL`,
  );
  const reader = await connection.runAndReadAll(`SELECT run_id FROM ${CHANGE_RUNS} ORDER BY run_id`);
  return reader.getRowObjectsJS().map((r) => String(r.run_id));
}

/** Fills {@link CHANGED_REPORTS} (one read of the live reports) and counts what the change set holds. */
async function buildChangeSet(
  connection: DuckDBConnection,
  from: Watermark,
  runIds: string[],
  where: string,
): Promise<ChangeSet> {
  const live = await currentDatabase(connection);
  const columns = columnList(await publishedColumns(connection, live, 'report_rows'));
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${CHANGED_REPORTS} AS SELECT ${columns} FROM main.report_rows WHERE ${where}`,
  );
  const reader = await connection.runAndReadAll(
    `SELECT (SELECT coalesce(sum(refined), 0) FROM main.sync_runs WHERE run_id IN ${IN_CHANGE}) AS refined,
       (SELECT count(seen_all_at) FROM main.sync_runs WHERE run_id IN ${IN_CHANGE}) AS lifted,
       (SELECT count(*) FROM ${CHANGED_REPORTS}) AS changed,
       (SELECT count(*) FROM ${CHANGED_REPORTS} WHERE ${NEW_VERSION}) AS versions,
       (SELECT count(*) FROM main.report_versions_closed WHERE ${appendedVersionsWhere(from.closedUntil)}) AS appended`,
  );
  const row = reader.getRowObjectsJS()[0] ?? {};
  return {
    runIds,
    changedReports: Number(row.changed),
    lifted: Number(row.lifted) > 0,
    newVersions: Number(row.versions),
    refined: Number(row.refined) > 0,
    appendedVersions: Number(row.appended),
    closedAfter: from.closedUntil,
  };
}

const IN_CHANGE = `(SELECT run_id FROM ${CHANGE_RUNS})`;

/**
 * SQL condition on `report_rows` selecting the changed ones: their `run_id` is one of `runIds` (a report a
 * run versioned was last written by that run or a later one), or their `unseen_since` is the `seen_all_at`
 * of one (marked unseen by it, see the module comment). Ids and times are spelled out, so DuckDB's zone
 * maps skip the row groups no run of the change set wrote (a subquery or an `OR` with `version_run_id` read
 * all 10M rows: ~3 s, measured).
 */
async function changedWhere(connection: DuckDBConnection, runIds: readonly string[]): Promise<string> {
  if (runIds.length === 0) return 'false';
  const reader = await connection.runAndReadAll(
    `SELECT DISTINCT strftime(timezone('UTC', seen_all_at), '%Y-%m-%dT%H:%M:%S.%fZ') AS mark
     FROM main.sync_runs WHERE run_id IN ${IN_CHANGE} AND seen_all_at IS NOT NULL ORDER BY mark`,
  );
  const marks = reader.getRowObjectsJS().map((r) => `${literal(String(r.mark))}::TIMESTAMPTZ`);
  const byRun = `run_id IN (${runIds.map(literal).join(', ')})`;
  return marks.length === 0 ? byRun : `(${byRun} OR unseen_since IN (${marks.join(', ')}))`;
}
/** SQL condition on a changed report: its current version is new (or, with refined runs, changed in place). */
export const NEW_VERSION = `coalesce(version_run_id IN ${IN_CHANGE}, false)`;

/** SQL condition on `report_versions_closed` selecting the versions closed after `closedAfter`. */
export function appendedVersionsWhere(closedAfter: string | null): string {
  return closedAfter === null ? 'true' : `valid_to > '${closedAfter.replace(/'/g, "''")}'::TIMESTAMPTZ`;
}

/**
 * SQL selecting the change set's rows of a live table (schema `main`), `columns` in that order: the
 * changed reports, closed versions appended, the rows of the change set's runs, or every row.
 */
export function changedRowsSql(table: string, columns: readonly string[], changes: ChangeSet): string {
  const select = `SELECT ${columnList(columns)} FROM main.${ident(table)}`;
  switch (tablePolicy(table)) {
    case 'reports':
      return `SELECT ${columnList(columns)} FROM ${CHANGED_REPORTS}`;
    case 'appended':
      return `${select} WHERE ${appendedVersionsWhere(changes.closedAfter)}`;
    case 'by-run':
      return `${select} WHERE run_id IN ${IN_CHANGE}`;
    case 'whole':
      return select;
  }
}
