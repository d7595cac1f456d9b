import { existsSync } from 'node:fs';
import type { Config } from '../config/config.js';
import { SyncError } from '../util/errors.js';
import { screenWidth, wrapToWidth } from '../util/screen.js';
import { DATA_TABLES, KEPT_TABLES, resetData, tableRows } from '../warehouse/data-tables.js';
import { openMigratedWarehouse, publishedPathFor } from '../warehouse/open-migrated.js';
import { formatTable } from './format-table.js';

/**
 * The body of `reports-sync reset`: what it deletes and keeps (row counts), and with `yes` the reset
 * itself (warehouse/data-tables.ts `resetData`). Returns the text (or JSON) to print.
 *
 * @throws SyncError `WAREHOUSE_MISSING` (exit 2) when there is no warehouse file; `RESET_NOT_CONFIRMED`
 *   (exit 2) without `yes`, after the plan was printed; `WAREHOUSE_LOCKED` when another process holds it
 */
export async function resetWarehouse(
  config: Config,
  options: { yes: boolean; json: boolean },
): Promise<string> {
  if (config.warehouse !== ':memory:' && !existsSync(config.warehouse)) {
    throw new SyncError(
      'WAREHOUSE_MISSING',
      `There is no warehouse at ${config.warehouse}: nothing to reset.`,
      {
        context: { path: config.warehouse },
      },
    );
  }
  const warehouse = await openMigratedWarehouse(config);
  try {
    const c = await warehouse.connect();
    try {
      const data = await tableRows(c, DATA_TABLES);
      let kept = await tableRows(c, KEPT_TABLES);
      const published = publishedPathFor(config.warehouse);
      const width = screenWidth(process.stdout);
      const table = (rows: { table: string; rows: number }[]) =>
        formatTable(rows, { maxWidth: width, groupDigits: true });
      if (!options.yes) {
        const plan = options.json
          ? `${JSON.stringify({ warehouse: warehouse.path, wouldEmpty: data, keeps: kept, deleted: false }, null, 2)}\n`
          : wrapToWidth(
              `reports-sync reset empties these data tables of ${warehouse.path}:\n${table(data)}` +
                `and keeps the run log and what runs recorded:\n${table(kept)}`,
              width,
            );
        process.stdout.write(plan);
        throw new SyncError(
          'RESET_NOT_CONFIRMED',
          'Nothing was deleted: run `reports-sync reset --yes` to empty the data tables listed above.',
        );
      }
      const result = await resetData(c);
      kept = await tableRows(c, KEPT_TABLES); // the run log now holds the reset too
      const reports = result.emptied.find((t) => t.table === 'report_rows')?.rows ?? 0;
      if (options.json) {
        return `${JSON.stringify({ warehouse: warehouse.path, runId: result.runId, emptied: result.emptied, kept, deleted: true }, null, 2)}\n`;
      }
      return wrapToWidth(
        `Reset ${warehouse.path}: emptied ${result.emptied.length} data tables (${reports.toLocaleString('en-US')} reports):\n` +
          table(result.emptied) +
          `Kept the run log: ${kept.map((k) => `${k.table} (${k.rows.toLocaleString('en-US')} rows)`).join(', ')}; ` +
          `the reset is run ${result.runId} (job reset).\n` +
          (existsSync(published)
            ? `The published copy ${published} holds the old data until the next publish.\n`
            : '') +
          'The next sync loads every report again (reports-sync sync, or the daemon).\n',
        width,
      );
    } finally {
      c.closeSync();
    }
  } finally {
    warehouse.close();
  }
}
