import type { DuckDBConnection } from '@duckdb/node-api';
import {
  CHANGED_REPORTS,
  CHANGE_RUNS,
  NEW_VERSION,
  appendedVersionsWhere,
  tablePolicy,
  type ChangeSet,
} from './change-set.js';
import { keySql, type ParquetPart } from './parquet-layout.js';
import type { ChangedKeys, ParquetManifest } from './publish-parquet.js';
import { qualified } from './published-tables.js';

/**
 * Adds to `keys` the file keys (per part) of the rows a change set touches: in the previous copy `copy`
 * before the change set is applied (`before`: where changed rows were, for rows that moved or left), or in
 * the change set itself and the live warehouse (`after`: where they are now). Parts the manifest does not
 * know are left out (written whole).
 */
export async function addChangedKeys(
  connection: DuckDBConnection,
  keys: ChangedKeys,
  input: {
    copy: string;
    phase: 'before' | 'after';
    parts: ParquetPart[];
    manifest: ParquetManifest;
    changes: ChangeSet;
  },
): Promise<void> {
  for (const part of input.parts) {
    const period = input.manifest.parts[part.id]?.period;
    if (period === undefined) continue;
    const rows = changedRows(part, input.changes, input.phase === 'before' ? input.copy : undefined);
    const set = keys.get(part.id) ?? new Set<number>();
    if (rows === undefined || set === 'all') continue;
    if (rows === 'every') {
      keys.set(part.id, 'all');
      continue;
    }
    if (rows === 'all') set.add(0);
    else {
      const reader = await connection.runAndReadAll(
        `SELECT DISTINCT ${keySql(part, period)} AS k FROM ${rows}`,
      );
      for (const r of reader.getRowObjectsJS()) set.add(Number(r.k));
    }
    keys.set(part.id, set);
  }
}

/**
 * The changed rows of a part's table as a SQL `FROM` clause: in the previous copy (`copy` given) or now;
 * `all` for a table written whole (its one file), `every` when every file of the part changed (the lift of
 * `reports`, see change-set.ts), undefined when the change set touches none.
 */
function changedRows(
  part: ParquetPart,
  changes: ChangeSet,
  copy: string | undefined,
): string | 'all' | 'every' | undefined {
  const at = (table: string) => (copy === undefined ? `main.${table}` : qualified(copy, table));
  switch (tablePolicy(part.table)) {
    case 'whole':
      return 'all';
    case 'appended':
      if (copy !== undefined || changes.appendedVersions === 0) return undefined;
      return `${at(part.table)} WHERE ${appendedVersionsWhere(changes.closedAfter)}`;
    case 'by-run':
      return `${at(part.table)} WHERE run_id IN (SELECT run_id FROM ${CHANGE_RUNS})`;
    case 'reports': {
      // reports' own files change with every changed row, and all of them with a lift; the current
      // versions only with new versions (and with refined reports, whose `extra` changes in place).
      if (part.folder === 'reports' && changes.lifted) return 'every';
      const versions = part.folder !== 'reports' && !changes.refined ? ` WHERE ${NEW_VERSION}` : '';
      if (copy === undefined) return `${CHANGED_REPORTS}${versions}`;
      return `${at('report_rows')} WHERE id IN (SELECT id FROM ${CHANGED_REPORTS}${versions})`;
    }
  }
}
