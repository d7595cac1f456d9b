import type { Command } from 'commander';

/**
 * `reports-sync config`: print the effective configuration as `VARIABLE=value` lines, the names users
 * set (secrets redacted: the API key, credentials in URLs), or `--json`, or the Markdown table of
 * every setting for docs/configuration.md.
 */
export function registerConfig(program: Command): void {
  program
    .command('config')
    .description('Print the effective configuration as environment variables (validated; secrets redacted)')
    .option('--json', 'print one JSON object keyed by variable name')
    .option('--markdown', 'print the table of every setting (docs/configuration.md) instead')
    .action(async (flags: { markdown?: boolean; json?: boolean }) => {
      const { loadConfig, settingsMarkdown, effectiveSettings, unknownEnvNames } =
        await import('../config/config.js');
      if (flags.markdown) {
        process.stdout.write(`${settingsMarkdown()}\n`);
        return;
      }
      const settings = effectiveSettings(loadConfig());
      for (const warning of unknownEnvNames(process.env))
        process.stderr.write(`reports-sync: warning: ${warning}\n`);
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify(Object.fromEntries(settings.map((s) => [s.env, s.value])), null, 2)}\n`,
        );
        return;
      }
      const width = Math.max(...settings.map((s) => s.env.length));
      for (const s of settings) {
        const shown = s.value === undefined ? '(unset)' : String(s.value);
        process.stdout.write(
          `${s.env.padEnd(width)}  ${shown}${s.source === 'default' ? '' : `  (${s.source})`}\n`,
        );
      }
    });
}
