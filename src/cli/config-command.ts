import type { Command } from 'commander';
import { withCommonOptions, type CommonFlags } from './common-options.js';

/** One line of `reports-sync config`: a variable, its effective value, and where it came from. */
interface ConfigLine {
  env: string;
  value: string | number | boolean | undefined;
  source: string;
}

/**
 * `reports-sync config`: print the effective configuration as `VARIABLE  value` lines, the names users
 * set (secrets redacted: the API key, credentials in URLs), then each job's schedule variable
 * (`REPORTS_SCHEDULE_<JOB>`, its cron expression or `off`), or `--json`, or the Markdown table of every
 * setting for docs/configuration.md. `--base-url` and `--warehouse` show the configuration a command given
 * them would use.
 */
export function registerConfig(program: Command): void {
  withCommonOptions(
    program
      .command('config')
      .description(
        'Print the effective configuration as environment variables, job schedules included (validated; ' +
          'secrets redacted)',
      )
      .option('--json', 'print one JSON object keyed by variable name')
      .option('--markdown', 'print the table of every setting (docs/configuration.md) instead'),
  ).action(async (flags: CommonFlags & { markdown?: boolean; json?: boolean }) => {
    const [{ loadConfig, settingsMarkdown, effectiveSettings, envWarnings }, { loadJobs, scheduleEnvName }] =
      await Promise.all([import('../config/config.js'), import('../daemon/load-jobs.js')]);
    if (flags.markdown) {
      process.stdout.write(`${settingsMarkdown()}\n`);
      return;
    }
    const overrides = { baseUrl: flags.baseUrl, warehouse: flags.warehouse, logLevel: flags.logLevel };
    // A setting given as a flag says so, as one from the environment does.
    const flagOf: Record<string, [keyof typeof overrides, string]> = {
      REPORTS_BASE_URL: ['baseUrl', '--base-url'],
      REPORTS_WAREHOUSE: ['warehouse', '--warehouse'],
      REPORTS_LOG_LEVEL: ['logLevel', '--log-level'],
    };
    const lines: ConfigLine[] = effectiveSettings(loadConfig(process.env, overrides)).map((s) => {
      const flag = flagOf[s.env];
      return flag && overrides[flag[0]] !== undefined ? { ...s, source: flag[1] } : s;
    });
    for (const job of await loadJobs()) {
      const env = scheduleEnvName(job.name);
      const off = job.disabledReason === `${env}=off`;
      lines.push({
        env,
        value: off ? 'off' : job.schedule,
        source: off || job.scheduleFrom === env ? 'environment' : 'default',
      });
    }
    for (const warning of envWarnings(process.env))
      process.stderr.write(`reports-sync: warning: ${warning}\n`);
    if (flags.json) {
      process.stdout.write(
        `${JSON.stringify(Object.fromEntries(lines.map((s) => [s.env, s.value])), null, 2)}\n`,
      );
      return;
    }
    const width = Math.max(...lines.map((s) => s.env.length));
    for (const s of lines) {
      const shown = s.value === undefined ? '(unset)' : String(s.value);
      process.stdout.write(
        `${s.env.padEnd(width)}  ${shown}${s.source === 'default' ? '' : `  (${s.source})`}\n`,
      );
    }
  });
}
