import type { Command } from 'commander';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

/**
 * `reports-sync reset --yes`: a full refresh for the operator who wants to start over (dlt's `pipeline
 * drop`, Airbyte's "clear data"): empties the warehouse's data tables (warehouse/data-tables.ts) and keeps
 * the run log, in one transaction, recorded as a run of job `reset`. Without `--yes` it says what it would
 * delete and deletes nothing (exit 2, `RESET_NOT_CONFIRMED`). Exit 2 when the warehouse does not exist or
 * another process holds it.
 */
export function registerReset(program: Command): void {
  withCommonOptions(
    program
      .command('reset')
      .description(
        "Full refresh: empty the warehouse's data tables (reports, their history, flags, staging), keep the run log",
      )
      .option('--yes', 'really delete (without it: say what would be deleted, delete nothing)')
      .option('--json', 'print one JSON document instead of text'),
    { upstream: false },
  )
    .addHelpText(
      'after',
      '\nKept: the run log (sync_runs) and what runs recorded: rejected_records, drift_events and\n' +
        'drift_catalog, /stats snapshots, alert_events. The next sync loads every report again (its export is\n' +
        'fetched unconditionally); the published copy holds the old data until the next publish.',
    )
    .action(async (flags: CommonFlags & { yes?: boolean; json?: boolean }) => {
      const { config } = await configFromFlags(flags);
      const { resetWarehouse } = await import('./reset-report.js');
      process.stdout.write(
        await resetWarehouse(config, { yes: flags.yes === true, json: flags.json === true }),
      );
    });
}
