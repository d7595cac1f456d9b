import type { Command } from 'commander';
import type { PublishResult } from '../warehouse/publish.js';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

/**
 * `reports-sync publish`: publishes the read-only snapshot (the DuckDB copy and the Parquet set,
 * docs/deployment.md) now, as the daemon does after each job that changed the warehouse: the changes
 * since the published copy's watermark, or everything with `--full`. Prints what it did, or one JSON
 * document with `--json`. With `--postgres URL` it publishes to that PostgreSQL instead (publish-postgres.ts).
 * Exit 0 published, 1 `PUBLISH_FAILED` (the previous snapshot stays), 2 usage,
 * configuration or a warehouse held by another process (`reports-sync run` publishes by itself).
 */
export function registerPublish(program: Command): void {
  withCommonOptions(
    program
      .command('publish')
      .description(
        'Publish the read-only snapshot for analysts now (DuckDB copy and Parquet set): the changes since the last publish',
      ),
    { upstream: false },
  )
    .option(
      '--full',
      'rewrite the copy and every Parquet file instead of applying the changes since the last publish',
    )
    .option('--json', 'print one JSON document instead of the summary')
    .option(
      '--postgres <url>',
      'publish to this PostgreSQL instead of the snapshot (as `reports-sync publish-postgres` does)',
    )
    .action(async (flags: CommonFlags & { full?: boolean; json?: boolean; postgres?: string }) => {
      if (flags.postgres !== undefined) {
        const { config } = await configFromFlags(flags, { postgresUrl: flags.postgres });
        const { publishPostgresNow } = await import('./publish-postgres-report.js');
        const options = { full: flags.full === true, json: flags.json === true };
        process.stdout.write(await publishPostgresNow(config, options));
        return;
      }
      const { config } = await configFromFlags(flags);
      const [{ openMigratedWarehouse }, { publishSnapshot }, { requireWarehouseFile }] = await Promise.all([
        import('../warehouse/open-migrated.js'),
        import('../warehouse/publish.js'),
        import('../warehouse/database.js'),
      ]);
      requireWarehouseFile(config.warehouse);
      const warehouse = await openMigratedWarehouse(config);
      try {
        const result = await publishSnapshot(warehouse, undefined, {
          full: flags.full === true,
          threads: config.duckdbMergeThreads,
        });
        process.stdout.write(flags.json ? `${JSON.stringify(result, null, 2)}\n` : describePublish(result));
      } finally {
        warehouse.close();
      }
    });
}

/** The summary `reports-sync publish` prints: where, how (and why full), what changed, how long. */
export function describePublish(r: PublishResult): string {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const how =
    r.mode === 'full'
      ? `full: ${r.reason ?? 'asked for'}`
      : `incremental: ${r.changes?.runs ?? 0} runs, ${r.changes?.changedReports ?? 0} reports changed ` +
        `(${r.changes?.newVersions ?? 0} with a new version), ${r.changes?.appendedVersions ?? 0} versions closed`;
  return (
    `Published ${r.databasePath} and ${r.parquetPath}/ (${how})\n` +
    `  DuckDB copy ${seconds(r.databaseMs)}, Parquet ${seconds(r.parquetMs)}: ` +
    `${r.parquet.written} files written, ${r.parquet.linked} unchanged files linked` +
    `${r.parquet.mode === 'full' && r.mode === 'incremental' ? ` (Parquet written whole: ${r.parquet.reason})` : ''}\n`
  );
}
