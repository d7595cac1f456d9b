import { existsSync, statSync } from 'node:fs';
import type { Logger } from '../util/logger.js';
import { errorMessage, SyncError } from '../util/errors.js';
import type { Warehouse } from '../warehouse/database.js';
import { publishedPathFor } from '../warehouse/open-migrated.js';
import { publishSnapshot } from '../warehouse/publish.js';

/**
 * What `serve` does for readers of the file it holds: DuckDB lets no other process open the warehouse while
 * `serve` runs, not even read-only, so `sql`, `status`, `demo` and any DuckDB client would have nothing to
 * read. It publishes the snapshot (warehouse/publish.ts, as the daemon does) when there is none or the
 * one there predates the warehouse's last run; `serve` changes nothing, so that copy stays current while it
 * runs. An existing current copy is left as it is; a stale one is brought forward by the change set since it
 * (a full publish of 1M reports takes seconds to tens of seconds).
 * A failure is logged and serving goes on: the copy is a convenience, not the reader's job.
 */
export async function publishIfStale(warehouse: Warehouse, logger: Logger): Promise<void> {
  const path = publishedPathFor(warehouse.path);
  try {
    const last = await lastRunAt(warehouse);
    if (existsSync(path) && (last === undefined || statSync(path).mtime.getTime() >= last)) {
      logger.debug({ path }, 'the published copy is current: not published again');
      return;
    }
    const published = await publishSnapshot(warehouse);
    logger.info(
      {
        path: published.databasePath,
        ms: published.databaseMs + published.parquetMs,
        mode: published.mode,
        reason: published.reason,
      },
      'snapshot published for readers while serve holds the warehouse',
    );
  } catch (err) {
    logger.warn(
      { err: err instanceof SyncError ? err.toJSON() : errorMessage(err), path },
      'snapshot not published: other processes cannot read the warehouse while serve runs',
    );
  }
}

/** When the run log last changed (a run's end, or its start while it runs), epoch ms; none without runs. */
async function lastRunAt(warehouse: Warehouse): Promise<number | undefined> {
  const connection = await warehouse.connect();
  try {
    const [row] = (
      await connection.runAndReadAll(
        'SELECT epoch_ms(max(coalesce(finished_at, started_at)))::DOUBLE AS at FROM sync_runs',
      )
    ).getRowObjectsJS();
    return row?.at === null || row?.at === undefined ? undefined : Number(row.at);
  } finally {
    connection.closeSync();
  }
}
