import type { Config } from '../config/config.js';
import { openWarehouse, type Warehouse } from './database.js';
import { migrate } from './migrate.js';
import { closeStaleRuns } from './stale-runs.js';
import { ensureServingIndex } from './serving-index.js';
import { warehouseWriteError } from './warehouse-write-error.js';
import { basename, join, dirname } from 'node:path';

/**
 * The published copy's path for a warehouse path: `data/warehouse.duckdb` → `data/published/warehouse.duckdb`,
 * and a warehouse of another name beside it a folder of its own (`data/chicago.duckdb` →
 * `data/published-chicago/warehouse.duckdb`), so two warehouses in one folder never read each other's copy.
 * The Parquet set is in the same folder.
 */
export function publishedPathFor(warehousePath: string): string {
  const stem = basename(warehousePath).replace(/\.duckdb$/i, '');
  const folder = stem === 'warehouse' ? 'published' : `published-${stem}`;
  return join(dirname(warehousePath), folder, 'warehouse.duckdb');
}

/** The warehouse as {@link openMigratedWarehouse} opened it. */
export interface MigratedWarehouse extends Warehouse {
  /**
   * The run ids this open closed as `aborted` (`RUN_INTERRUPTED`): runs a dead process left `running` (an
   * out-of-memory kill, a SIGKILL). Empty when there were none.
   */
  readonly interruptedRuns: readonly string[];
}

/**
 * Opens the configured warehouse read-write with the configured DuckDB limits and brings its schema to
 * the current migration (building the reader's serving index once when it is new), and closes runs left `running` by a dead process (named in `interruptedRuns`). The caller owns the returned handle (one per process).
 *
 * @throws SyncError `WAREHOUSE_LOCKED` or `WAREHOUSE_OPEN`, see {@link openWarehouse};
 *   `WAREHOUSE_WRITE` when migrating or closing stale runs cannot write (disk full, read-only)
 */
export async function openMigratedWarehouse(config: Config): Promise<MigratedWarehouse> {
  const warehouse = await openWarehouse(config.warehouse, {
    memoryLimit: config.duckdbMemoryLimit,
    threads: config.duckdbThreads,
    publishedPath: publishedPathFor(config.warehouse),
  });
  let interruptedRuns: string[];
  try {
    const connection = await warehouse.connect();
    try {
      await migrate(connection);
      await ensureServingIndex(connection);
      // We hold the file exclusively now, so any run still marked running died with its process.
      interruptedRuns = await closeStaleRuns(connection);
    } finally {
      connection.closeSync();
    }
  } catch (err) {
    warehouse.close();
    throw warehouseWriteError(err, warehouse.path) ?? err;
  }
  return Object.assign(warehouse, { interruptedRuns });
}
