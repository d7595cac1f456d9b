import { Option, type Command } from 'commander';
import { prestartDecoders } from '../normalize/decoder-threads.js';
import { SYNC_TARGETS, type SyncTarget } from '../sync/sync-targets.js';
import { configFromFlags, withCommonOptions, withVerbose, type CommonFlags } from './common-options.js';

/**
 * `reports-sync sync`: one sync of the upstream into the warehouse. Exit 0 success, 1 run failed,
 * 2 usage/config, 130/143 stopped by SIGINT/SIGTERM (the run is recorded `aborted`).
 */
export function registerSync(program: Command): void {
  withCommonOptions(
    withVerbose(
      program
        .command('sync')
        .description(
          'Sync the upstream exports into the warehouse once (idempotent: re-running changes nothing new)',
        )
        .addOption(
          new Option(
            '--source <source>',
            'what to sync: default = NDJSON export then /stats snapshot; csv = the paged CSV export; ' +
              'stats = only a /stats snapshot; all = NDJSON, then CSV (each export also snapshots /stats); ' +
              'recent = the newest reports of the list endpoint, up to the first page the warehouse already holds',
          )
            .choices([...SYNC_TARGETS])
            .default('default'),
        )
        .option('--page-size <rows>', 'rows per CSV page (env REPORTS_CSV_PAGE_SIZE, default 1000)')
        .option(
          '--postgres <url>',
          'publish to this PostgreSQL after the runs (env REPORTS_POSTGRES_URL; a failure never fails the sync)',
        )
        .option(
          '--json',
          'print one JSON document (runs, counters, rejects by reason) instead of the summary',
        ),
    ),
  ).action(
    async (
      flags: CommonFlags & { source: SyncTarget; pageSize?: string; json?: boolean; postgres?: string },
    ) => {
      const { config, logger } = await configFromFlags(
        flags,
        { csvPageSize: flags.pageSize, postgresUrl: flags.postgres },
        { interactive: true },
      );
      // The decode threads load their modules while this thread opens the warehouse (~0.5 s of a run's start).
      if (flags.source !== 'stats') prestartDecoders(config.decodeWorkers);
      const [{ requireBaseUrl }, { syncAndPrint }] = await Promise.all([
        import('../config/config.js'),
        import('./sync-and-print.js'),
      ]);
      requireBaseUrl(config);
      await syncAndPrint(config, logger, flags.source, { json: flags.json });
    },
  );
}
