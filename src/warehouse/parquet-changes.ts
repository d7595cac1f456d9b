import type { DuckDBConnection } from '@duckdb/node-api';
import {
  CHANGE_RUNS,
  appendedVersionsWhere,
  changedReportIdsSql,
  tablePolicy,
  type ChangeSet,
} from './change-set.js';
import { keySql, type ParquetPart } from './parquet-layout.js';
import type { ChangedKeys, ParquetManifest } from './publish-parquet.js';
import { qualified } from './published-tables.js';

/**
 * A part of a large table whose change set holds more than this share of its rows is written whole: finding
 * the keys of millions of changed rows costs more than it saves (a nightly run sees every report).
 */
const WHOLE_SHARE = 0.2;
const WHOLE_MIN_ROWS = 100_000;

/**
 * Adds to `keys` the file keys (per part) of the rows a change set touches, as they are in `database`: the
 * previous copy before the change set is applied (`before`: where changed rows were, for rows that moved
 * or left), or the live warehouse (`after`: where they are now). Parts the manifest does not know
 * are left out (written whole). A part whose changed rows are a large share of its table is marked `all`.
 */
export async function addChangedKeys(
  connection: DuckDBConnection,
  keys: ChangedKeys,
  input: {
    database: string;
    phase: 'before' | 'after';
    parts: ParquetPart[];
    manifest: ParquetManifest;
    changes: ChangeSet;
  },
): Promise<void> {
  const { database, phase, changes } = input;
  for (const part of input.parts) {
    const period = input.manifest.parts[part.id]?.period;
    if (period === undefined || keys.get(part.id) === 'all') continue;
    const rows = await changedRowsOf(connection, part, changes);
    if (rows === 'all') {
      keys.set(part.id, 'all');
      continue;
    }
    if (rows === 'none' || (rows === 'appended' && phase === 'before')) continue;
    const where = rows === 'appended' ? appendedVersionsWhere(changes.closedAfter) : rows;
    const reader = await connection.runAndReadAll(
      `SELECT DISTINCT ${keySql(part, period)} AS k FROM ${qualified(database, part.table)} WHERE ${where}`,
    );
    const set = keys.get(part.id) ?? new Set<number>();
    if (set === 'all') continue;
    for (const r of reader.getRowObjectsJS()) set.add(Number(r.k));
    keys.set(part.id, set);
  }
}

/** Which rows of a part's table the change set touches: a SQL condition, or all, none, or the appended. */
async function changedRowsOf(
  connection: DuckDBConnection,
  part: ParquetPart,
  changes: ChangeSet,
): Promise<string | 'all' | 'none' | 'appended'> {
  const policy = tablePolicy(part.table);
  if (policy === 'whole') return 'all';
  if (policy === 'appended') return 'appended';
  if (policy === 'by-run') return `run_id IN (SELECT run_id FROM ${CHANGE_RUNS})`;
  // reports: its own files change with every changed row; the current versions only with new versions
  // (and with refined reports, whose `extra` changes in place).
  const versionsOnly = part.folder !== 'reports' && !changes.touchedColumns.includes('extra');
  const changed = changes.replacedReports + (versionsOnly ? 0 : changes.touchedReports);
  if (changed === 0) return 'none';
  const reader = await connection.runAndReadAll('SELECT count(*) AS n FROM main.reports');
  const rows = Number(reader.getRowObjectsJS()[0]?.n);
  if (rows >= WHOLE_MIN_ROWS && changed > WHOLE_SHARE * rows) return 'all';
  return `id IN (${changedReportIdsSql(versionsOnly ? 'replaced' : 'all')})`;
}
