import { InvalidArgumentError, type Command } from 'commander';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

/**
 * `reports-sync runs [--job J] [--failed] [--limit N] [--json]` lists the run log, newest first, and
 * `reports-sync runs show <run id> [--json]` tells one run: outcome, error, counters, timings, rejects by
 * issue code and path with raw examples, drift, data-quality flags and alerts — the facts of the status
 * page's run page (`/runs/<run id>`), read by the same code (reader/run-details.ts). Tables fit the
 * terminal (format-table.ts). While the daemon holds the warehouse they read the published copy and say so.
 * Exit 2 for an unknown run (`RUN_NOT_FOUND`) or a missing warehouse.
 */
export function registerRuns(program: Command): void {
  const runs = withCommonOptions(
    program
      .command('runs')
      .description('List the runs of the run log, newest first (`runs show <run id>` tells one run)')
      .option('--job <name>', 'only the runs of this job (sync-ndjson, snapshot-stats, …)')
      .option('--failed', 'only the runs that failed or were aborted')
      .option('--limit <n>', 'how many runs to list', positive, 20)
      .option('--json', 'print one JSON document instead of a table'),
    { upstream: false },
  ).action(async (flags: CommonFlags & { job?: string; failed?: boolean; limit: number; json?: boolean }) => {
    const { config } = await configFromFlags(flags);
    const { listRuns } = await import('./runs-report.js');
    process.stdout.write(await listRuns(config, flags));
  });
  withCommonOptions(
    runs
      .command('show')
      .description(
        'Tell one run: outcome, error, counters, timings, rejects with raw examples, drift, flags, alerts',
      )
      .argument('<run-id>', 'the run id (from `reports-sync runs`, the status page or sync --json)')
      .option('--examples <n>', 'raw examples per reject group', positive, 3)
      .option('--json', 'print one JSON document instead of text'),
    { upstream: false },
  ).action(async (runId: string, flags: CommonFlags & { examples: number; json?: boolean }) => {
    const { config } = await configFromFlags(flags);
    const { showRun } = await import('./runs-report.js');
    process.stdout.write(await showRun(config, runId, flags));
  });
}

/** A whole number, 1 or more (commander refuses anything else with this message). */
function positive(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1) {
    throw new InvalidArgumentError('expected a whole number, 1 or more');
  }
  return Number(value);
}
