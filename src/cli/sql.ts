import { Option, type Command } from 'commander';
import { stringify } from 'csv-stringify/sync';
import { openForReading } from '../warehouse/open-for-reading.js';
import { formatAge } from '../util/format-age.js';
import { SyncError, errorMessage } from '../util/errors.js';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';
import { formatTable } from './format-table.js';
import { jsonRows } from './json-rows.js';

/** `reports-sync sql "<query>"`: read-only SQL on the warehouse, printed as a table, CSV or JSON. */
export function registerSql(program: Command): void {
  withCommonOptions(
    program
      .command('sql')
      .description('Run read-only SQL on the warehouse and print the result')
      .argument('<query>', 'SQL to run, e.g. "select status, count(*) from reports group by all"')
      .addOption(
        new Option('--format <format>', 'output format').choices(['table', 'csv', 'json']).default('table'),
      ),
    { upstream: false },
  )
    .addHelpText(
      'after',
      '\nViews to query: current_reports (current, not removed), report_history (every version, SCD2).\n' +
        'Tables: reports, report_versions, sync_runs, rejected_records, stats_snapshots, stats_values.\n' +
        'With --format json, JSON columns are JSON values and timestamps ISO 8601.\n' +
        'The warehouse is opened read-only; statements that write are refused. While reports-sync run holds\n' +
        'the warehouse, the published copy (published/warehouse.duckdb next to it) is read, and stderr says so.',
    )
    .action(async (query: string, flags: CommonFlags & { format: 'table' | 'csv' | 'json' }) => {
      const { config } = configFromFlags(flags);
      const opened = await openForReading(config.warehouse);
      const warehouse = opened.warehouse;
      if (opened.copy === 'published') {
        // stderr, so stdout stays the result (CSV/JSON pipes).
        process.stderr.write(
          `reports-sync: the warehouse ${opened.livePath} is in use by ${opened.heldBy}; ` +
            `reading the published copy ${warehouse.path}, published ${formatAge(Date.now() - (opened.publishedAt?.getTime() ?? Date.now()))} ago\n`,
        );
      }
      try {
        const connection = await warehouse.connect();
        let rows: Record<string, unknown>[];
        try {
          const result = await connection.runAndReadAll(query);
          rows = flags.format === 'json' ? jsonRows(result) : result.getRowObjectsJson();
        } catch (err) {
          throw new SyncError('SQL_ERROR', errorMessage(err), { exitCode: 1 });
        } finally {
          connection.closeSync();
        }
        process.stdout.write(render(rows, flags.format));
      } finally {
        warehouse.close();
      }
    });
}

function render(rows: Record<string, unknown>[], format: 'table' | 'csv' | 'json'): string {
  switch (format) {
    case 'json':
      return `${JSON.stringify(rows, null, 2)}\n`;
    case 'csv':
      return stringify(rows, {
        header: true,
        columns: rows[0] ? Object.keys(rows[0]) : [],
        cast: { object: (v) => JSON.stringify(v) },
      });
    case 'table':
      return formatTable(rows);
  }
}
