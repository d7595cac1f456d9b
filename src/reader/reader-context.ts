import type { Config } from '../config/config.js';
import type { Logger } from '../util/logger.js';
import type { ConnectionPool } from './connection-pool.js';
import type { CurrentValidators } from './current-validators.js';
import type { PageIndex } from './page-index.js';
import type { ReaderMetrics } from './reader-metrics.js';
import type { ResponseCache } from './response-cache.js';
import type { SpoolCache } from './spool-cache.js';
import type { VersionCache } from './version-cache.js';

/** What every reader route gets: the connection pool, the frozen config, the logger and per-state caches. */
export interface ReaderContext {
  /** Connections for short queries: lists, stats, validators. */
  pool: ConnectionPool;
  /** Connections that write export bodies (REPORTS_READER_EXPORT_CONNECTIONS), held while a body is written. */
  exportPool: ConnectionPool;
  config: Config;
  logger: Logger;
  cache: VersionCache;
  /** Validators of the current state for the list (cached for REPORTS_READER_VALIDATORS_TTL_MS). */
  validators: CurrentValidators;
  /** The serving index's bucket counts per filter: where page P of a filter starts (page-index.ts). */
  pageIndex: PageIndex;
  /** Bodies of list pages of the current data state. */
  pages: ResponseCache;
  /** Export bodies spooled to disk, so a slow client never holds a warehouse connection. */
  spools: SpoolCache;
  metrics: ReaderMetrics;
}
