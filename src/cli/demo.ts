import type { Command } from 'commander';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

/**
 * `reports-sync demo` (what `npm start` runs): with no upstream configured, serve the bundled real sample
 * from the simulator on a free loopback port and sync it; with `REPORTS_BASE_URL` set, sync that upstream.
 * Prints a readable summary. Exit 0 when every run succeeded, 1 otherwise, 130/143 on SIGINT/SIGTERM.
 */
export function registerDemo(program: Command): void {
  withCommonOptions(
    program
      .command('demo')
      .description(
        'Sync once and print a summary. Without REPORTS_BASE_URL: start the simulator with the real sample ' +
          '(data/sample) on 127.0.0.1 and sync from it (offline)',
      ),
  ).action(async (flags: CommonFlags) => {
    const parsed = await configFromFlags(flags, {}, { interactive: true });
    const [{ loadDataset }, { startSimulator }, { withOverrides }, { sampleDatasetPath }, { syncAndPrint }] =
      await Promise.all([
        import('../simulator/load-dataset.js'),
        import('../simulator/server.js'),
        import('../config/config.js'),
        import('../util/package-root.js'),
        import('./sync-and-print.js'),
      ]);
    const logger = parsed.logger;
    let config = parsed.config;
    let stopSimulator: (() => Promise<void>) | undefined;
    if (!config.baseUrl) {
      const path = sampleDatasetPath();
      const simulator = await startSimulator({
        dataset: await loadDataset(path),
        port: 0,
        host: '127.0.0.1',
      });
      stopSimulator = () => simulator.close();
      config = withOverrides(config, { baseUrl: simulator.url });
      process.stdout.write(
        `No REPORTS_BASE_URL set: serving the real sample ${path}\nfrom the simulator at ${simulator.url}\n`,
      );
    }
    try {
      await syncAndPrint(config, logger, 'default', {
        beforeSync: (path) => process.stdout.write(`Syncing ${config.baseUrl} into ${path} …\n`),
      });
      process.stdout.write(
        `\nQuery it: npx reports-sync sql "select destination, status, count(*) from reports group by all"\n` +
          `      or: duckdb -readonly ${config.warehouse}\n` +
          `   serve it: npx reports-sync serve   (the public API shape on http://127.0.0.1:8080)\n`,
      );
    } finally {
      await stopSimulator?.();
      logger.flush?.();
    }
  });
}
