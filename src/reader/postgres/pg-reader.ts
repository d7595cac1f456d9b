import type { FastifyInstance, RouteHandlerMethod } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import type { Config } from '../../config/config.js';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import type { Logger } from '../../util/logger.js';
import { createReaderApp, OPS_PATHS } from '../http-shell.js';
import { ReaderMetrics } from '../reader-metrics.js';
import { ResponseCache } from '../response-cache.js';
import { PAGE_HEADERS } from '../routes/status.js';
import { SpoolCache } from '../spool-cache.js';
import { renderStatusPage } from '../status-html.js';
import { VersionCache } from '../version-cache.js';
import { PgListPages } from './pg-list-pages.js';
import { PgReaderPool } from './pg-pool.js';
import { PgReaderQueries } from './pg-queries.js';
import {
  pgCsvRoute,
  pgGeojsonRoute,
  pgListRoute,
  pgNdjsonRoute,
  pgStatsRoute,
  type PgReaderContext,
} from './pg-routes.js';
import { readPgStatusData } from './pg-status.js';
import { readPgRunDetail } from './pg-run-detail.js';
import { renderRunNotFound, renderRunPage } from '../run-page-html.js';
import { PgCurrentState } from './pg-validators.js';

/** Options of {@link buildPostgresReader}. */
export interface PostgresReaderOptions {
  /** The serving database (`--postgres`, REPORTS_POSTGRES_URL) and schema (REPORTS_POSTGRES_SCHEMA). */
  url: string;
  schema: string;
  /** Reader settings, as for the DuckDB reader (pool sizes, timeouts, page-size maxima, caches). */
  config: Config;
  logger: Logger;
  registry?: Registry;
}

/**
 * The reader on PostgreSQL (docs/deployment.md, "Serving from PostgreSQL"): the public API of the DuckDB
 * reader (same HTTP shell, validation, wire formats, validators and 304, CORS, compression) read from
 * the serving schema a publish keeps current, with no DuckDB file. Stateless: run any number of replicas
 * against one server or its streaming replicas. Every answer reads one published state: a list page in
 * one statement, an export or the stats in one REPEATABLE READ transaction with the `publish_state` row
 * that gives its `ETag`, so a reader during a publish sees the run before or after, never half.
 * Unknown upstream fields come as received, byte for byte as from the DuckDB reader (`extra_json`, the
 * `json` copy of `extra`; rows published before it existed fall back to the `jsonb` one until a publish
 * rewrites them). Difference from the DuckDB reader: the status page shows what the published run log holds.
 */
export async function buildPostgresReader(options: PostgresReaderOptions): Promise<FastifyInstance> {
  const { config } = options;
  const logger = options.logger.child({ component: 'reader', store: 'postgres' });
  const pools = {
    acquireTimeoutMs: config.readerAcquireTimeoutMs,
    queryTimeoutMs: config.readerQueryTimeoutMs,
  };
  const pool = new PgReaderPool({ url: options.url, size: config.readerConnections, ...pools });
  const exportPool = new PgReaderPool({ url: options.url, size: config.readerExportConnections, ...pools });
  const queries = new PgReaderQueries(options.schema);
  const current = new PgCurrentState(pool, queries, config.readerValidatorsTtlMs);
  const ctx: PgReaderContext = {
    pool,
    exportPool,
    queries,
    listPages: new PgListPages(options.schema),
    config,
    current,
    cache: new VersionCache(),
    pages: new ResponseCache(config.readerCacheBytes),
    spools: new SpoolCache(config.readerSpoolBytes),
  };
  const metrics = new ReaderMetrics(options.registry);
  const published = new Gauge({
    name: 'reports_sync_postgres_served_publish_timestamp_seconds',
    help: 'Unix time (s) of the publish that brought the data state this PostgreSQL reader serves (publish_state.published_at; a publish bringing no run leaves it).',
    registers: [metrics.registry],
  });
  const app = await createReaderApp({
    config,
    logger,
    metrics,
    onClose: async () => {
      current.stop();
      ctx.spools.close();
      await Promise.all([pool.close(), exportPool.close()]);
    },
    onInternalError: () =>
      current.noteFailure('WAREHOUSE_UNREACHABLE', 'A PostgreSQL query failed; see the reader log.'),
  });
  app.get(PUBLIC_PATHS.list, pgListRoute(ctx));
  app.get(PUBLIC_PATHS.geojson, pgGeojsonRoute(ctx));
  app.get(PUBLIC_PATHS.csv, pgCsvRoute(ctx));
  app.get(PUBLIC_PATHS.ndjson, pgNdjsonRoute(ctx));
  app.get(PUBLIC_PATHS.stats, pgStatsRoute(ctx));
  app.get(OPS_PATHS.healthz, healthz(ctx));
  app.get(OPS_PATHS.metrics, async (_request, reply) => {
    const state = await current.state();
    published.reset();
    if (state.publishedMs !== null) published.set(state.publishedMs / 1000);
    const text = await metrics.registry.metrics();
    return reply.code(200).header('Content-Type', metrics.registry.contentType).send(text);
  });
  app.get(OPS_PATHS.status, async (_request, reply) => {
    const data = await pool.use((c) => readPgStatusData(c, options.schema));
    const html = renderStatusPage(data, {
      schedule: undefined,
      nowMs: Date.now(),
      alerts: [],
      refreshSeconds: 30,
      pool: pool.state,
    });
    return reply.code(200).headers(PAGE_HEADERS).send(html);
  });
  app.get(OPS_PATHS.run, async (request, reply) => {
    const { runId } = request.params as { runId: string };
    const detail = await pool.use((c) => readPgRunDetail(c, options.schema, runId));
    return reply
      .code(detail ? 200 : 404)
      .headers(PAGE_HEADERS)
      .send(detail ? renderRunPage(detail, Date.now()) : renderRunNotFound(runId));
  });
  await current.start();
  await app.ready();
  return app;
}

/**
 * `GET /healthz` from memory, as the DuckDB reader's (routes/healthz.ts): 200 `ok`/`degraded` with the
 * published run, or 503 `unavailable` while PostgreSQL cannot be reached or holds no publish.
 */
function healthz(ctx: PgReaderContext): RouteHandlerMethod {
  return async (_request, reply) => {
    const observed = ctx.current.observed;
    const pool = ctx.pool.state;
    const exportPool = ctx.exportPool.state;
    reply.header('Cache-Control', 'no-store');
    if (observed.unreachable !== undefined || observed.state === undefined) {
      const error = observed.unreachable ?? { code: 'READER_POSTGRES_UNAVAILABLE', message: 'Not read yet.' };
      return reply
        .code(503)
        .header('Retry-After', '5')
        .send({ status: 'unavailable', warehouse: 'unreachable', error, pool, exportPool });
    }
    const { lastRunId, publishedMs } = observed.state;
    return reply.code(200).send({
      status: pool.saturated ? 'degraded' : 'ok',
      warehouse: 'reachable',
      published:
        lastRunId === null || publishedMs === null
          ? null
          : { lastRunId, publishedAt: new Date(publishedMs).toISOString() },
      pool,
      exportPool,
    });
  };
}
