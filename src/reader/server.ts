import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../config/config.js';
import { PUBLIC_PATHS } from '../schema/public-query.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import { ConnectionPool } from './connection-pool.js';
import { CurrentValidators } from './current-validators.js';
import { PageIndex } from './page-index.js';
import { createReaderApp, OPS_PATHS } from './http-shell.js';
import type { ReaderContext } from './reader-context.js';
import { ReaderMetrics } from './reader-metrics.js';
import { csvRoute } from './routes/csv.js';
import { geojsonRoute } from './routes/geojson.js';
import { healthzRoute } from './routes/healthz.js';
import { listRoute } from './routes/list.js';
import { metricsRoute } from './routes/metrics.js';
import { ndjsonRoute } from './routes/ndjson.js';
import { statsRoute } from './routes/stats.js';
import { statusRoute } from './routes/status.js';
import { runPageRoute } from './routes/run-page.js';
import type { ScheduledJob } from './status-html.js';
import { ResponseCache } from './response-cache.js';
import { SpoolCache } from './spool-cache.js';
import { VersionCache } from './version-cache.js';

/** Options of {@link buildReader}. */
export interface ReaderOptions {
  /** The process's one warehouse (docs/how-a-sync-works.md); the reader takes connections from it and never closes it. */
  warehouse: Warehouse;
  /**
   * Reader settings: `readerConnections`, `readerExportConnections`, `readerQueryTimeoutMs`,
   * `readerIdleTimeoutMs`, page-size maxima.
   */
  config: Config;
  /** The process logger; request logs and errors go to a `component: "reader"` child. */
  logger: Logger;
  /** Where `/metrics` registers; default: the reader's own registry with process metrics. */
  registry?: Registry;
  /**
   * The jobs' schedule for the status page (cron expression, next run, freshness objective), read at each
   * render: the daemon knows it; `serve` does not.
   */
  schedule?: () => { timezone: string; jobs: readonly ScheduledJob[] };
}

export { OPS_PATHS, listenQuietly } from './http-shell.js';

/**
 * Builds the embedded reader (docs/reader.md): a fastify instance that serves the public query shape of the
 * upstream (docs/upstream-contract.md) from the warehouse, read-only: `/api/v1/public/reports` (JSON list), `/reports.geojson`,
 * `/reports.csv` (paged, `Link` rel="next"), `/reports.ndjson`, `/reports/stats`, plus `/healthz`,
 * `/metrics` and the status page at `/`. Answers match the simulator's byte for byte on the same data (shared validation, `toWire`,
 * `toFeature`, `reportCsvCells`, `computeStats`), removed reports excluded.
 *
 * Order of work per request, as the simulator's: route (404 `NOT_FOUND`) → method (405
 * `METHOD_NOT_ALLOWED` with `Allow: GET, HEAD`) → query (400 `INVALID_QUERY` naming the parameter) →
 * validators (304 on a matching `If-None-Match` or `If-Modified-Since`) → body. A warehouse whose
 * connections stay busy past the acquire timeout, a query past the query timeout or a reader shutting down
 * answers 503 `UNAVAILABLE` with `Retry-After`; any other failure 500 `INTERNAL` with a fixed message and
 * the request id (the error itself goes to the log only: never a stack trace or SQL in a response).
 *
 * HTTP conventions for dashboards: CORS (REPORTS_READER_CORS_ORIGINS, preflight answered), every body
 * compressed when the client accepts it (br, gzip; streamed), `Cache-Control` on every public answer
 * (REPORTS_READER_MAX_AGE_S), validators that change only when the served data changes. Exports are
 * spooled to disk (export-response.ts) and `/healthz` answers from memory, so slow clients cannot starve
 * the connection pool.
 *
 * Free of process concerns: it neither listens nor handles signals, and `close()` ends its connections
 * but leaves the warehouse open, so the daemon can mount it beside its jobs on the same instance.
 *
 * @example
 * const app = await buildReader({ warehouse, config, logger });
 * await app.listen({ port: config.port, host: config.host });
 * // … later
 * await app.close();
 */
export async function buildReader(options: ReaderOptions): Promise<FastifyInstance> {
  const { config } = options;
  const logger = options.logger.child({ component: 'reader' });
  const pool = new ConnectionPool(options.warehouse, config.readerConnections, config.readerAcquireTimeoutMs);
  const exportPool = new ConnectionPool(
    options.warehouse,
    config.readerExportConnections,
    config.readerAcquireTimeoutMs,
  );
  const metrics = new ReaderMetrics(options.registry);
  const ctx: ReaderContext = {
    pool,
    exportPool,
    config,
    logger,
    cache: new VersionCache(),
    validators: new CurrentValidators(pool, config.readerValidatorsTtlMs, config.readerQueryTimeoutMs),
    pageIndex: new PageIndex(),
    pages: new ResponseCache(config.readerCacheBytes),
    spools: new SpoolCache(config.readerSpoolBytes),
    metrics,
  };
  const app = await createReaderApp({
    config,
    logger,
    metrics,
    onClose: () => {
      ctx.validators.stop();
      ctx.spools.close();
      pool.close();
      exportPool.close();
    },
    onInternalError: () =>
      ctx.validators.noteFailure('WAREHOUSE_UNREACHABLE', 'A warehouse query failed; see the reader log.'),
  });

  app.get(PUBLIC_PATHS.list, listRoute(ctx));
  app.get(PUBLIC_PATHS.geojson, geojsonRoute(ctx));
  app.get(PUBLIC_PATHS.csv, csvRoute(ctx));
  app.get(PUBLIC_PATHS.ndjson, ndjsonRoute(ctx));
  app.get(PUBLIC_PATHS.stats, statsRoute(ctx));
  app.get(OPS_PATHS.status, statusRoute(ctx, options.schedule));
  app.get(OPS_PATHS.run, runPageRoute(ctx));
  app.get(OPS_PATHS.healthz, healthzRoute(ctx));
  app.get(OPS_PATHS.metrics, metricsRoute(ctx));

  await ctx.validators.start();
  await app.ready();
  return app;
}
