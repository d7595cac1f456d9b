import { constants as zlib } from 'node:zlib';
import compress from '@fastify/compress';
import cors from '@fastify/cors';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../config/config.js';
import { PUBLIC_PATHS, PUBLIC_PREFIX } from '../schema/public-query.js';
import { isSyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import { ConnectionPool } from './connection-pool.js';
import { CurrentValidators } from './current-validators.js';
import { PageIndex } from './page-index.js';
import { pathOf } from './public-query.js';
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
import { sendError } from './send-api-error.js';
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

/** Operational paths (not part of the public API). */
export const OPS_PATHS = {
  status: '/',
  healthz: '/healthz',
  metrics: '/metrics',
  run: '/runs/:runId',
} as const;

const ALLOWED = 'GET, HEAD';

/**
 * Builds the embedded reader (docs/reader.md): a fastify instance that serves the public query shape of the
 * seed from the warehouse, read-only: `/api/v1/public/reports` (JSON list), `/reports.geojson`,
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
  const cacheControl =
    config.readerMaxAgeSeconds === 0 ? 'no-cache' : `public, max-age=${config.readerMaxAgeSeconds}`;

  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One line per request from the onResponse hook below instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Socket inactivity: an idle keep-alive connection, or a client that stopped reading an export.
    connectionTimeout: config.readerIdleTimeoutMs,
    // Slow clients (slowloris): the request head, then the whole request, must arrive in bounded time.
    requestTimeout: config.readerRequestTimeoutMs,
    // Node enforces both timeouts from a periodic sweep (default every 30 s): sweep at their scale.
    http: {
      headersTimeout: Math.min(config.readerHeadersTimeoutMs, config.readerRequestTimeoutMs),
      connectionsCheckingInterval: Math.max(100, Math.min(config.readerHeadersTimeoutMs, 30_000) / 2),
    },
    keepAliveTimeout: Math.min(config.readerIdleTimeoutMs, 72_000),
    return503OnClosing: true,
    trustProxy: config.readerTrustProxy,
    frameworkErrors: (error, request, reply) => {
      // A path that is not valid percent-encoding names no resource: 404, as the simulator answers.
      request.log.debug({ code: error.code }, 'unroutable request');
      notFound(request, reply);
    },
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const seconds = reply.elapsedTime / 1000;
    metrics.observeRequest(request.method, route, reply.statusCode, seconds);
    // Per request, so at debug: a busy reader at info would bury everything else in the log.
    request.log.debug(
      {
        method: request.method,
        url: request.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });
  app.addHook('onClose', async () => {
    ctx.validators.stop();
    ctx.spools.close();
    pool.close();
    exportPool.close();
  });
  // Every public answer may be stored but must be revalidated (or is fresh for REPORTS_READER_MAX_AGE_S);
  // errors are not stored at all.
  app.addHook('onSend', async (request, reply, payload) => {
    if (!reply.hasHeader('cache-control') && pathOf(request.url).startsWith(PUBLIC_PREFIX)) {
      reply.header('Cache-Control', reply.statusCode >= 400 ? 'no-store' : cacheControl);
    }
    return payload;
  });
  // An OPTIONS that is no CORS preflight (no Access-Control-Request-Method) gets the API's answer (405 with
  // Allow, or 404), as the upstream gives it, not @fastify/cors's plain-text 400.
  const routed = new Set<string>([...Object.values(PUBLIC_PATHS), ...Object.values(OPS_PATHS)]);
  app.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'OPTIONS' || request.headers['access-control-request-method'] !== undefined)
      return;
    const path = pathOf(request.url);
    if (!routed.has(path)) return notFound(request, reply);
    return sendError(
      reply,
      405,
      'METHOD_NOT_ALLOWED',
      `OPTIONS is not allowed on ${path} (allowed: ${ALLOWED}).`,
      {
        Allow: ALLOWED,
      },
    );
  });
  await app.register(cors, {
    origin: corsOrigins(config.readerCorsOrigins),
    methods: ['GET', 'HEAD'],
    exposedHeaders: ['ETag', 'Last-Modified', 'Link', 'Retry-After', 'Content-Length'],
    maxAge: 86_400,
  });
  // Every body, streams included; brotli at quality 4: near gzip's CPU cost, smaller output (11 is for
  // static files, far too slow per request).
  await app.register(compress, {
    encodings: ['br', 'gzip'],
    // mime-db does not list NDJSON as compressible.
    customTypes: /^(text\/|application\/(json|x-ndjson|geo\+json)\b)/,
    brotliOptions: { params: { [zlib.BROTLI_PARAM_QUALITY]: 4 } },
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

  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request.url);
    if (routed.has(path) && request.method !== 'GET' && request.method !== 'HEAD') {
      return sendError(
        reply,
        405,
        'METHOD_NOT_ALLOWED',
        `${request.method} is not allowed on ${path} (allowed: ${ALLOWED}).`,
        { Allow: ALLOWED },
      );
    }
    return notFound(request, reply);
  });

  app.setErrorHandler((error, request, reply) => {
    const path = pathOf(request.url);
    if (isSyncError(error, 'READER_QUERY_TIMEOUT', 'READER_BUSY', 'READER_CLOSED')) {
      request.log.warn(
        { err: error.toJSON(), url: request.url },
        'request refused: warehouse busy or closing',
      );
      return sendError(reply, 503, 'UNAVAILABLE', error.message, { 'Retry-After': '1' });
    }
    const status = (error as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      request.log.debug({ code: (error as { code?: string }).code, url: request.url }, 'bad request');
      return sendError(reply, status, 'BAD_REQUEST', `The request for ${path} could not be read.`);
    }
    request.log.error({ err: error, url: request.url }, 'request failed');
    ctx.validators.noteFailure('WAREHOUSE_UNREACHABLE', 'A warehouse query failed; see the reader log.');
    return sendError(
      reply,
      500,
      'INTERNAL',
      `The reader could not answer ${request.method} ${path}; the server log has the details (request ${request.id}).`,
    );
  });

  await ctx.validators.start();
  await app.ready();
  return app;
}

/** `*` or the comma-separated origins of REPORTS_READER_CORS_ORIGINS, as @fastify/cors takes them. */
function corsOrigins(setting: string): string | string[] {
  const origins = setting
    .split(',')
    .map((o) => o.trim())
    .filter((o) => o !== '');
  return origins.includes('*') ? '*' : origins;
}

function notFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const known = Object.values(PUBLIC_PATHS).join(', ');
  return sendError(
    reply,
    404,
    'NOT_FOUND',
    `No resource at ${pathOf(request.url)} (public endpoints: ${known}).`,
  );
}

/**
 * `app.listen` without fastify's own "Server listening at …" log lines (one per interface on 0.0.0.0): the
 * command that listens announces itself once, on stdout (`listening on <url>`).
 */
export async function listenQuietly(
  app: FastifyInstance,
  options: { port: number; host: string },
): Promise<void> {
  const level = app.log.level;
  app.log.level = 'warn';
  try {
    await app.listen(options);
  } finally {
    app.log.level = level;
  }
}
