import { Option, type Command } from 'commander';
import { stringify } from 'csv-stringify/sync';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';
import { screenWidth } from '../util/screen.js';
import { formatTable } from './format-table.js';
import { stringifyRows } from './json-rows.js';
import type { StatementResult } from './sql-statements.js';

/**
 * `reports-sync sql "<query>"`: read-only SQL on the warehouse, printed as a table (every statement's result,
 * NULL shown as `NULL`, numbers right-aligned), CSV or JSON (one statement only). Exit 2 when the warehouse
 * does not exist.
 */
export function registerSql(program: Command): void {
  withCommonOptions(
    program
      .command('sql')
      .description('Run read-only SQL on the warehouse and print the result')
      // A query may start with a comment (`-- open reports…`, as the README's do): an argument commander
      // would take for an unknown option. Words that are option-like are refused in the action instead.
      .allowUnknownOption()
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
        'The warehouse is opened read-only: statements that change it are refused (COPY … TO a file of yours\n' +
        'works, as in any DuckDB). While another process holds the warehouse (reports-sync run or serve),\n' +
        'the published copy (published/warehouse.duckdb next to it; published-<name>/ for <name>.duckdb) is read,\n' +
        'and stderr says so.\n' +
        'On a terminal, tables fit its width (long values cut with …); piped, every value is printed whole.',
    )
    .action(async (query: string, flags: CommonFlags & { format: 'table' | 'csv' | 'json' }) => {
      if (/^-[^\s]*$/.test(query)) {
        const { SyncError } = await import('../util/errors.js');
        throw new SyncError('CLI_INVALID_OPTION', `unknown option '${query}' (see reports-sync sql --help)`);
      }
      const { config } = await configFromFlags(flags);
      const [{ openForReading }, { formatAge }, { SyncError, errorMessage }, { runStatements }] =
        await Promise.all([
          import('../warehouse/open-for-reading.js'),
          import('../util/format-age.js'),
          import('../util/errors.js'),
          import('./sql-statements.js'),
        ]);
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
        let results: StatementResult[];
        try {
          results = await runStatements(connection, query, { json: flags.format === 'json' });
        } catch (err) {
          // Our own refusals (no statement, two columns of one name) keep their code and exit status.
          if (err instanceof SyncError) throw err;
          const message = errorMessage(err);
          // A write to a view (`reports`, migration 020) fails on binding, before the read-only check.
          const view = /Can only (update|delete from|insert into) base table/i.test(message);
          throw new SyncError(
            'SQL_ERROR',
            view ? `${message.trim()}: the warehouse is opened read-only, and reports is a view` : message,
          );
        } finally {
          connection.closeSync();
        }
        if (results.length > 1 && flags.format !== 'table') {
          throw new SyncError(
            'SQL_MULTIPLE',
            `--format ${flags.format} prints one result: the query holds ${results.length} statements (run them one at a time)`,
          );
        }
        if (flags.format === 'table') {
          process.stdout.write(
            results
              .map((r) =>
                formatTable(r.rows, {
                  nullAs: 'NULL',
                  rightAlign: r.numeric,
                  maxWidth: screenWidth(process.stdout),
                }),
              )
              .join('\n'),
          );
        } else {
          process.stdout.write(render(results[0]?.rows ?? [], flags.format, results[0]?.columns ?? []));
        }
      } finally {
        warehouse.close();
      }
    });
}

function render(
  rows: Record<string, unknown>[],
  format: 'table' | 'csv' | 'json',
  columns: string[],
): string {
  switch (format) {
    case 'json':
      return `${stringifyRows(rows)}\n`;
    case 'csv':
      return stringify(rows, {
        header: true,
        columns, // the header also for an empty result
        // PostgreSQL's CSV rule, as the exports: an empty cell is NULL, `""` the empty text; booleans as
        // `true`/`false` (csv-stringify's default writes `1` and an empty cell, which reads as NULL).
        cast: {
          object: (v) => JSON.stringify(v),
          boolean: (v) => (v ? 'true' : 'false'),
          string: (v) => (v === '' ? { value: '', quoted_empty: true } : v),
        },
      });
    case 'table':
      return formatTable(rows);
  }
}
