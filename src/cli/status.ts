import { InvalidArgumentError, type Command } from 'commander';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

/**
 * `reports-sync status`: which copy it read, the schedule of `reports-sync run` (next run of each job,
 * its last run and last success), the age of the published snapshot, the last runs with their outcome,
 * current reports by destination and status, and totals; `--json` prints the same as one JSON document.
 * While the daemon holds the warehouse it reads the published copy and says so (docs/reader.md).
 * Exit 2 when the warehouse does not exist.
 */
export function registerStatus(program: Command): void {
  withCommonOptions(
    program
      .command('status')
      .description(
        'Show the job schedule, the published snapshot, the last runs, row counts and rejects of the warehouse',
      ),
    { upstream: false },
  )
    .option('--runs <n>', 'how many recent runs to show', runCount, 10)
    .option('--json', 'print one JSON document (the same tables) instead of text')
    .action(async (flags: CommonFlags & { runs: number; json?: boolean }) => {
      const { config } = await configFromFlags(flags);
      const [{ loadJobs }, { readStatus, renderStatus }, { screenWidth }] = await Promise.all([
        import('../daemon/load-jobs.js'),
        import('./status-report.js'),
        import('../util/screen.js'),
      ]);
      const report = await readStatus(config, await loadJobs(), flags.runs);
      process.stdout.write(
        flags.json
          ? `${JSON.stringify(report, null, 2)}\n`
          : renderStatus(report, config, screenWidth(process.stdout)),
      );
    });
}

/** `--runs`: a whole number, 1 or more (commander refuses anything else with this message). */
function runCount(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1) {
    throw new InvalidArgumentError('expected a whole number of runs, 1 or more');
  }
  return Number(value);
}
