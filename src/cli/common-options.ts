import { Option, type Command } from 'commander';
import { loadConfig, type Config, type ConfigOverrides } from '../config/config.js';
import { createLogger, type Logger } from '../util/logger.js';

/** Flags shared by the commands that talk to the upstream and/or the warehouse. */
export interface CommonFlags {
  baseUrl?: string;
  warehouse?: string;
  logLevel?: string;
}

/** Adds `--base-url`, `--warehouse` and `--log-level` to a command. */
export function withCommonOptions(
  command: Command,
  which: { upstream?: boolean } = { upstream: true },
): Command {
  if (which.upstream !== false) {
    command.option('--base-url <url>', 'upstream base URL (env REPORTS_BASE_URL)');
  }
  return command
    .option(
      '--warehouse <path>',
      'DuckDB warehouse file (env REPORTS_WAREHOUSE, default data/warehouse.duckdb)',
    )
    .addOption(
      new Option('--log-level <level>', 'log level (env REPORTS_LOG_LEVEL)').choices([
        'fatal',
        'error',
        'warn',
        'info',
        'debug',
        'trace',
        'silent',
      ]),
    );
}

/**
 * Parses the configuration for a command (flags over environment over defaults) and creates the logger.
 * @throws SyncError `CONFIG_INVALID` (exit 2) before any work starts
 */
export function configFromFlags(
  flags: CommonFlags,
  extra: ConfigOverrides = {},
): { config: Config; logger: Logger } {
  const config = loadConfig(process.env, {
    baseUrl: flags.baseUrl,
    warehouse: flags.warehouse,
    logLevel: flags.logLevel,
    ...extra,
  });
  return { config, logger: createLogger(config.logLevel, config.logPretty) };
}
