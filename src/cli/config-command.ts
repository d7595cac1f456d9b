import type { Command } from 'commander';
import { loadConfig, settingsMarkdown } from '../config/config.js';

/** `reports-sync config`: print the effective configuration (key redacted), or the README table. */
export function registerConfig(program: Command): void {
  program
    .command('config')
    .description('Print the effective configuration (validated; the API key is redacted)')
    .option('--markdown', 'print the table of every setting for the README instead')
    .action((flags: { markdown?: boolean }) => {
      if (flags.markdown) {
        process.stdout.write(`${settingsMarkdown()}\n`);
        return;
      }
      const config = loadConfig();
      process.stdout.write(
        `${JSON.stringify({ ...config, apiKey: config.apiKey ? '[redacted]' : undefined }, null, 2)}\n`,
      );
    });
}
