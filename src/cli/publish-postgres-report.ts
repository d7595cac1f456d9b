import type { Config } from '../config/config.js';
import { SyncError, errorMessage } from '../util/errors.js';
import { notePublish } from '../warehouse/postgres/publish-record.js';
import { openMigratedWarehouse } from '../warehouse/open-migrated.js';
import { requireWarehouseFile } from '../warehouse/database.js';
import { publishToPostgres, type PostgresPublishResult } from '../warehouse/postgres/publish-postgres.js';

/**
 * Publishes the warehouse of `config` to its PostgreSQL and returns what to print: one line per table
 * (rows copied, rows refused), or the result as JSON.
 *
 * @throws SyncError `CONFIG_INVALID` without a PostgreSQL URL; `POSTGRES_PUBLISH_FAILED` from the publish;
 *   `WAREHOUSE_LOCKED` when another process holds the warehouse
 */
export async function publishPostgresNow(
  config: Config,
  options: { full: boolean; json: boolean },
): Promise<string> {
  const url = config.postgresUrl;
  if (url === undefined) {
    throw new SyncError(
      'CONFIG_INVALID',
      'No PostgreSQL to publish to: set REPORTS_POSTGRES_URL or pass --postgres postgres://user:password@host/db',
    );
  }
  requireWarehouseFile(config.warehouse);
  const warehouse = await openMigratedWarehouse(config);
  try {
    let result;
    try {
      result = await publishToPostgres(warehouse, { url, schema: config.postgresSchema, full: options.full });
    } catch (err) {
      notePublish(warehouse.path, { ok: false, error: errorMessage(err) });
      throw err;
    }
    notePublish(warehouse.path, { ok: true, lastRunId: result.lastRunId });
    return options.json ? `${JSON.stringify(result, null, 2)}\n` : describe(result, config.postgresSchema);
  } finally {
    warehouse.close();
  }
}

function describe(result: PostgresPublishResult, schema: string): string {
  const how =
    result.mode === 'full'
      ? `every table copied (${result.fullReason ?? 'full'})`
      : 'the changes since the last publish applied';
  const lines = [`Published to PostgreSQL schema ${schema} in ${(result.ms / 1000).toFixed(1)} s: ${how}.`];
  for (const [table, counts] of Object.entries(result.tables)) {
    const refused = counts.refused > 0 ? `, ${counts.refused} refused (see publish_refused)` : '';
    lines.push(`  ${table.padEnd(24)} ${String(counts.rows).padStart(10)} rows${refused}`);
  }
  lines.push(`Last run applied: ${result.lastRunId ?? 'none'}; watermark ${result.watermark ?? 'none'}.`);
  return `${lines.join('\n')}\n`;
}
