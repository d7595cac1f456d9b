import type { Command } from 'commander';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

/** Flags of `reports-sync publish-postgres`. */
interface PublishPostgresFlags extends CommonFlags {
  postgres?: string;
  schema?: string;
  full?: boolean;
  json?: boolean;
}

/**
 * `reports-sync publish-postgres`: publishes the warehouse to PostgreSQL now (docs/deployment.md, "Serving
 * from PostgreSQL"): the changes since the last publish, or every table with `--full` (and on the first
 * publish). Exit 0 published, 1 PostgreSQL refused or was unreachable (`POSTGRES_PUBLISH_FAILED`; it is
 * unchanged), 2 no URL configured, no warehouse, or the warehouse held by another process.
 */
export function registerPublishPostgres(program: Command): void {
  withCommonOptions(
    program
      .command('publish-postgres')
      .description(
        'Publish the warehouse to PostgreSQL now: the changes since the last publish (one transaction), or every table with --full',
      )
      .option('--postgres <url>', 'the PostgreSQL to publish to (env REPORTS_POSTGRES_URL)')
      .option('--schema <name>', 'the serving schema (env REPORTS_POSTGRES_SCHEMA, default reports_sync)')
      .option('--full', 'copy every table again instead of the changes since the last publish')
      .option('--json', 'print one JSON document instead of text'),
    { upstream: false },
  ).action(async (flags: PublishPostgresFlags) => {
    const { config } = await configFromFlags(flags, {
      postgresUrl: flags.postgres,
      postgresSchema: flags.schema,
    });
    const { publishPostgresNow } = await import('./publish-postgres-report.js');
    process.stdout.write(
      await publishPostgresNow(config, { full: flags.full === true, json: flags.json === true }),
    );
  });
}
