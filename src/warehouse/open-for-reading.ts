import { existsSync, statSync } from 'node:fs';
import { isSyncError } from '../util/errors.js';
import { openWarehouse, type Warehouse } from './database.js';
import { publishedPathFor } from './open-migrated.js';

/** What {@link openForReading} opened. */
export interface ReadingHandle {
  warehouse: Warehouse;
  /** `live`: the warehouse itself; `published`: the snapshot, because another process holds the live file. */
  copy: 'live' | 'published';
  /** The live warehouse path (absolute when opened, as configured otherwise). */
  livePath: string;
  /** For `published`: who holds the live file (`reports-sync serve (PID 1234)`) and when the copy was written. */
  heldBy?: string | undefined;
  publishedAt?: Date | undefined;
}

/**
 * Opens the warehouse read-only for one-shot readers (`sql`, `status`). When another process holds the
 * live file (the daemon: DuckDB then refuses even read-only opens, docs/how-a-sync-works.md), it opens the published
 * snapshot instead (docs/reader.md) and says so in the handle, so the caller can tell the user which copy
 * it read.
 *
 * @throws SyncError `WAREHOUSE_LOCKED` (naming the holder and the published path) when the live
 *   file is held and no snapshot has been published yet; `WAREHOUSE_MISSING`, `WAREHOUSE_OPEN` as
 *   {@link openWarehouse}
 */
export async function openForReading(warehousePath: string): Promise<ReadingHandle> {
  const publishedPath = publishedPathFor(warehousePath);
  try {
    const warehouse = await openWarehouse(warehousePath, { readOnly: true, publishedPath });
    return { warehouse, copy: 'live', livePath: warehouse.path };
  } catch (err) {
    if (!isSyncError(err, 'WAREHOUSE_LOCKED') || !existsSync(publishedPath)) throw err;
    const pid = err.context.pid;
    const holder = typeof err.context.holder === 'string' ? err.context.holder : 'another process';
    const publishedAt = statSync(publishedPath).mtime;
    const warehouse = await openWarehouse(publishedPath, { readOnly: true });
    return {
      warehouse,
      copy: 'published',
      livePath: warehousePath,
      heldBy: typeof pid === 'number' ? `${holder} (PID ${pid})` : holder,
      publishedAt,
    };
  }
}
