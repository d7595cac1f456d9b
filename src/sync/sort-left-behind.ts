import type { DuckDBConnection } from '@duckdb/node-api';
import type { Config } from '../config/config.js';
import type { Logger } from '../util/logger.js';
import { readMemoryLimit, withMemoryLimit } from '../warehouse/memory-limit.js';
import { sortPendingRows } from '../warehouse/recluster.js';

/**
 * Sorts again the rows a move of the reader's serving split left behind (warehouse/recluster.ts), once a
 * run has committed: slice by slice, each its own transaction, so neither the sort nor its commits take
 * memory that grows with the warehouse. Every run that succeeds calls it, a `304` one included, so the
 * next run finishes a sort a crash interrupted; `signal` (a stop, the daemon's shutdown) ends it after the
 * slice under way. DuckDB's memory limit is the read limit meanwhile (memory-limit.ts): each slice's sort is
 * small, and the merge's cache of scanned blocks would otherwise stay at the full limit through it (a
 * 10M-report whole re-sort peaked at 996–1,043 MiB with the full limit, 891 MiB with the read limit;
 * docs/performance.md, "The sort leaves the run's transaction"). The daemon keeps the full limit, as for
 * reading: its reader shares the instance.
 *
 * Never throws: the run has succeeded whatever happens here; a failure is logged and left to the next run.
 */
export async function sortLeftBehind(
  connection: DuckDBConnection,
  config: Pick<Config, 'duckdbReadMemoryLimit' | 'maxRecordBytes'>,
  logger: Logger,
  signal?: AbortSignal,
): Promise<void> {
  const started = Date.now();
  try {
    const limit = readMemoryLimit(config.duckdbReadMemoryLimit, config.maxRecordBytes);
    const onStart = (rows: number, slices: number) =>
      logger.info({ rows, slices }, 'sorting again the rows left behind by the serving split');
    const rows = await withMemoryLimit(connection, limit, () =>
      sortPendingRows(connection, { signal, onStart }),
    );
    if (rows > 0) {
      const stopped = signal?.aborted === true;
      logger.info(
        { rows, ms: Date.now() - started, stopped },
        stopped
          ? 'sorting the rows left behind by the serving split stopped; the next run goes on'
          : 'rows left behind by the serving split sorted again',
      );
    }
  } catch (err) {
    logger.warn({ err }, 'sorting the rows left behind by the serving split failed; the next run goes on');
  }
}
