import { Option, type Command } from 'commander';
import type { Config, ConfigOverrides } from '../config/config.js';
import type { Logger } from '../util/logger.js';

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
 * Loaded on demand, like every heavy module of the CLI, so `--help` and `--version` stay fast.
 * With `interactive` (the one-shot `sync` and `demo`), a terminal shows warnings and errors only unless a
 * level is given (`--log-level`, `REPORTS_LOG_LEVEL`): the progress line and the summary tell the rest.
 * @throws SyncError `CONFIG_INVALID` (exit 2) before any work starts
 */
export async function configFromFlags(
  flags: CommonFlags,
  extra: ConfigOverrides = {},
  options: { interactive?: boolean } = {},
): Promise<{ config: Config; logger: Logger }> {
  const [{ loadConfig, unknownEnvNames }, { createLogger }] = await Promise.all([
    import('../config/config.js'),
    import('../util/logger.js'),
  ]);
  const config = loadConfig(process.env, {
    baseUrl: flags.baseUrl,
    warehouse: flags.warehouse,
    logLevel: flags.logLevel,
    ...extra,
  });
  for (const warning of unknownEnvNames(process.env))
    process.stderr.write(`reports-sync: warning: ${warning}\n`);
  const onTerminal = Boolean(process.stderr.isTTY) && config.logPretty !== false;
  const levelGiven = flags.logLevel !== undefined || Boolean(process.env.REPORTS_LOG_LEVEL);
  const level = options.interactive && onTerminal && !levelGiven ? 'warn' : config.logLevel;
  return { config, logger: createLogger(level, config.logPretty) };
}
