import type { Command } from 'commander';
import { openWarehouse } from '../warehouse/database.js';
import { publishedPathFor } from '../warehouse/open-migrated.js';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';
import { formatTable } from './format-table.js';

/** `reports-sync status`: last runs, current reports by destination and status, rejects per run. */
export function registerStatus(program: Command): void {
  withCommonOptions(
    program.command('status').description('Show the last runs, row counts and rejects of the warehouse'),
    { upstream: false },
  )
    .option('--runs <n>', 'how many recent runs to show', '10')
    .action(async (flags: CommonFlags & { runs: string }) => {
      const { config } = configFromFlags(flags);
      const warehouse = await openWarehouse(config.warehouse, {
        readOnly: true,
        publishedPath: publishedPathFor(config.warehouse),
      });
      try {
        const c = await warehouse.connect();
        try {
          const out = process.stdout;
          const runs = (
            await c.runAndReadAll(
              `SELECT run_id, job, status, strftime(started_at, '%Y-%m-%d %H:%M:%S') AS started,
                      round(epoch(finished_at) - epoch(started_at), 2) AS seconds,
                      records_read AS "read", records_loaded AS loaded, records_rejected AS rejected,
                      inserted, updated, unchanged, removed, error->>'message' AS error
               FROM sync_runs ORDER BY started_at DESC LIMIT $n`,
              { n: Math.max(1, Number(flags.runs) || 10) },
            )
          ).getRowObjectsJson();
          out.write(`Warehouse ${warehouse.path}\n\nLast runs:\n${formatTable(runs)}`);
          const counts = (
            await c.runAndReadAll(
              `SELECT destination, status, count(*) AS reports FROM reports WHERE removed_at IS NULL
               GROUP BY ALL ORDER BY destination, status`,
            )
          ).getRowObjectsJson();
          out.write(`\nCurrent reports by destination and status:\n${formatTable(counts)}`);
          const totals = (
            await c.runAndReadAll(
              `SELECT count(*) FILTER (WHERE removed_at IS NULL) AS current, count(*) FILTER (WHERE removed_at IS NOT NULL) AS removed,
                      (SELECT count(*) FROM report_versions) AS versions, (SELECT count(*) FROM rejected_records) AS rejected_records
               FROM reports`,
            )
          ).getRowObjectsJson();
          out.write(`\nTotals:\n${formatTable(totals)}`);
        } finally {
          c.closeSync();
        }
      } finally {
        warehouse.close();
      }
    });
}
