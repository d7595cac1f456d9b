import type { Command } from 'commander';
import { configFromFlags, withCommonOptions, withVerbose, type CommonFlags } from './common-options.js';

/**
 * `reports-sync demo` (what `npm start` runs): with no upstream configured, serve the bundled real sample
 * from the simulator on a free loopback port and sync it; with `REPORTS_BASE_URL` set, sync that upstream.
 * The warehouse is opened first: a locked one (exit 2) is reported before the simulator starts. Prints a
 * readable summary and how to query the warehouse next. Exit 0 when every run succeeded, 1 otherwise,
 * 130/143 on SIGINT/SIGTERM.
 */
export function registerDemo(program: Command): void {
  withCommonOptions(
    withVerbose(
      program
        .command('demo')
        .description(
          'Sync once and print a summary. Without REPORTS_BASE_URL: start the simulator with the real sample ' +
            '(data/sample) on 127.0.0.1 and sync from it (offline)',
        ),
    ),
  ).action(async (flags: CommonFlags) => {
    const parsed = await configFromFlags(flags, {}, { interactive: true });
    const [
      { loadDataset },
      { startSimulator },
      { withOverrides },
      { sampleDatasetPath },
      { syncAndPrint },
      { screenWidth, wrapToWidth },
      { selfCommand },
    ] = await Promise.all([
      import('../simulator/load-dataset.js'),
      import('../simulator/server.js'),
      import('../config/config.js'),
      import('../util/package-root.js'),
      import('./sync-and-print.js'),
      import('../util/screen.js'),
      import('./self-command.js'),
    ]);
    const logger = parsed.logger;
    const config = parsed.config;
    const say = (text: string) => process.stdout.write(wrapToWidth(text, screenWidth(process.stdout)));
    const startSample = async () => {
      const path = sampleDatasetPath();
      const simulator = await startSimulator({
        dataset: await loadDataset(path),
        port: 0,
        host: '127.0.0.1',
      });
      say(
        `No REPORTS_BASE_URL set: serving the real sample ${path} from the simulator at ${simulator.url}\n`,
      );
      return { config: withOverrides(config, { baseUrl: simulator.url }), close: () => simulator.close() };
    };
    try {
      await syncAndPrint(config, logger, 'default', {
        upstream: config.baseUrl ? undefined : startSample,
        beforeSync: (path, synced) => say(`Syncing ${synced.baseUrl} into ${path} …\n`),
      });
      const cli = selfCommand();
      say(
        `\nQuery it:  ${cli} sql "select destination, status, count(*) from reports group by all"\n` +
          `Serve it:  ${cli} serve   (the public API on http://127.0.0.1:8080)\n` +
          `Or open ${config.warehouse} with any DuckDB client (Python: pip install duckdb; the duckdb CLI: ` +
          'https://duckdb.org/docs/installation), read-only while nothing else holds it.\n',
      );
    } finally {
      logger.flush?.();
    }
  });
}
