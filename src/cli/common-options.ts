import { Option, type Command } from 'commander';
import type { Config, ConfigOverrides } from '../config/config.js';
import type { Logger } from '../util/logger.js';

/** Flags shared by the commands that talk to the upstream and/or the warehouse. */
export interface CommonFlags {
  baseUrl?: string;
  warehouse?: string;
  logLevel?: string;
  /** `--verbose` of the one-shot `sync` and `demo`: the full log (level info) on a terminal too. */
  verbose?: boolean;
}

/**
 * `-v, --verbose` for the one-shot commands that print a summary (`sync`, `demo`): the full log on a
 * terminal, where by default only brief warnings show (see {@link configFromFlags}).
 */
export function withVerbose(command: Command): Command {
  return command.option(
    '-v, --verbose',
    'show the full log (level info, each entry with its fields) above the summary; by default a terminal ' +
      'shows one line per warning and the summary tells the rest',
  );
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
 * With `interactive` (the one-shot `sync` and `demo`), a terminal shows warnings and errors only, one brief
 * line each (util/logger.ts), unless a level is given (`--log-level`, `REPORTS_LOG_LEVEL`) or `--verbose`
 * (level info): the progress line and the summary tell the rest, once. Off a terminal the log is JSON.
 * @throws SyncError `CONFIG_INVALID` (exit 2) before any work starts
 */
export async function configFromFlags(
  flags: CommonFlags,
  extra: ConfigOverrides = {},
  options: { interactive?: boolean } = {},
): Promise<{ config: Config; logger: Logger }> {
  const [{ loadConfig, envWarnings }, { createLogger }] = await Promise.all([
    import('../config/config.js'),
    import('../util/logger.js'),
  ]);
  const config = loadConfig(process.env, {
    baseUrl: flags.baseUrl,
    warehouse: flags.warehouse,
    logLevel: flags.logLevel,
    ...extra,
  });
  for (const warning of envWarnings(process.env)) process.stderr.write(`reports-sync: warning: ${warning}\n`);
  const onTerminal = Boolean(process.stderr.isTTY) && config.logPretty !== false;
  const levelGiven =
    flags.logLevel !== undefined || Boolean(process.env.REPORTS_LOG_LEVEL) || flags.verbose === true;
  const brief = options.interactive === true && onTerminal && !levelGiven;
  const level = brief ? 'warn' : flags.verbose && flags.logLevel === undefined ? 'info' : config.logLevel;
  return { config, logger: createLogger(level, config.logPretty, { brief }) };
}
