import { Command } from 'commander';
import { registerConfig } from './config-command.js';
import { registerDemo } from './demo.js';
import { registerServe } from './serve.js';
import { registerSimulate } from './simulate.js';
import { registerSql } from './sql.js';
import { registerStatus } from './status.js';
import { registerSync } from './sync.js';
import { registerRun } from './run.js';
import { registerRuns } from './runs.js';
import { registerReset } from './reset.js';
import { registerPublish } from './publish.js';
import { registerPublishPostgres } from './publish-postgres.js';
import { packageVersion } from '../util/version.js';

/**
 * The `reports-sync` command line. Each command lives in its own file (`src/cli/<command>.ts`) and
 * registers itself here; a command loads its heavy modules (DuckDB, fastify, the pipeline) only when it
 * runs, so `--help` and `--version` answer at once. Exit codes (exit-codes.ts): 0 success, 1 the run failed, 2 usage or
 * configuration error (also: warehouse locked by another process), 130/143 stopped by SIGINT/SIGTERM.
 */
export function buildProgram(): Command {
  const program = new Command('reports-sync')
    .description(
      'Mirror the public citizen-reports API (NDJSON + paged CSV exports, /stats) into a DuckDB warehouse,\n' +
        'and serve the same public query shape from it.',
    )
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    // An option after a subcommand is that subcommand's (`runs show <id> --json`, not `runs --json`).
    .enablePositionalOptions()
    .exitOverride();
  registerSync(program);
  registerStatus(program);
  registerRuns(program);
  registerReset(program);
  registerPublishPostgres(program);
  registerSql(program);
  registerRun(program);
  registerPublish(program);
  registerDemo(program);
  registerSimulate(program);
  registerServe(program);
  registerConfig(program);
  return program;
}
