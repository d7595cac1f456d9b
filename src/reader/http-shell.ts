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
import type { Config } from '../config/config.js';
import { PUBLIC_PATHS, PUBLIC_PREFIX } from '../schema/public-query.js';
import { isSyncError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { answerClientError } from './client-error.js';
import { pathOf } from './public-query.js';
import type { ReaderMetrics } from './reader-metrics.js';
import { sendError } from './send-api-error.js';

/** Operational paths (not part of the public API). */
export const OPS_PATHS = {
  status: '/',
  healthz: '/healthz',
  metrics: '/metrics',
  run: '/runs/:runId',
} as const;

const ALLOWED = 'GET, HEAD';

/** Options of {@link createReaderApp}. */
export interface ReaderShellOptions {
  /** Reader settings: timeouts, CORS origins, `Cache-Control` max-age, trusted proxies. */
  config: Config;
  /** The reader's logger (`component: "reader"`). */
  logger: Logger;
  /** Where every answer is observed (`reports_sync_http_request_duration_seconds`). */
  metrics: ReaderMetrics;
  /** Ends the store's connections and caches when the app closes. */
  onClose: () => void | Promise<void>;
  /** Called on a 500: the store notes that a query failed, so `/healthz` reports it. */
  onInternalError: () => void;
}

/**
 * The HTTP side every reader shares, whatever store it reads (docs/reader.md): fastify with its timeouts,
 * request logging and metrics, `Cache-Control` on public answers, CORS, compression, the API's 404 and 405
 * answers, and the error handler (SyncError `READER_QUERY_TIMEOUT` / `READER_BUSY` / `READER_CLOSED` /
 * `READER_POSTGRES_UNAVAILABLE` → 503 `UNAVAILABLE` with `Retry-After`, a client error → its 4xx, anything
 * else → 500 `INTERNAL` with the request id and nothing of the error itself). The caller registers its
 * routes (the paths of `PUBLIC_PATHS` and {@link OPS_PATHS}) and calls `ready()`.
 */
export async function createReaderApp(options: ReaderShellOptions): Promise<FastifyInstance> {
  const { config, logger, metrics } = options;
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
    rewriteUrl: routedUrl,
    clientErrorHandler: answerClientError,
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
    await options.onClose();
  });
  // Every public answer may be stored but must be revalidated (or is fresh for REPORTS_READER_MAX_AGE_S);
  // errors are not stored at all.
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.hasHeader('cache-control')) return payload;
    if (reply.statusCode >= 400) reply.header('Cache-Control', 'no-store');
    else if (pathOf(request.originalUrl).startsWith(PUBLIC_PREFIX))
      reply.header('Cache-Control', cacheControl);
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
    if (
      isSyncError(
        error,
        'READER_QUERY_TIMEOUT',
        'READER_BUSY',
        'READER_CLOSED',
        'READER_POSTGRES_UNAVAILABLE',
      )
    ) {
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
    options.onInternalError();
    return sendError(
      reply,
      500,
      'INTERNAL',
      `The reader could not answer ${request.method} ${path}; the server log has the details (request ${request.id}).`,
    );
  });

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

/**
 * The URL fastify routes: the request target's path as the upstream reads it (WHATWG URL: dot segments
 * resolved, `%XX` left as sent) with its query, without any fragment. Fastify matches routes on the percent-decoded path, where
 * `/api/v1/public/repo%72ts` would be the list the upstream answers 404 to, so a path still holding a `%`
 * after that is sent to no route (the 404 names it as sent).
 */
function routedUrl(req: { url?: string }): string {
  const target = req.url ?? '/';
  const path = pathOf(target);
  if (path.includes('%')) return UNROUTED;
  // A fragment is no part of the query, even when a `?` follows the `#` (`/reports#top?status=X`).
  const [beforeFragment = target] = target.split('#', 1);
  const query = beforeFragment.indexOf('?');
  return query < 0 ? path : `${path}${beforeFragment.slice(query)}`;
}

const UNROUTED = '/.reports-sync-unrouted';

function notFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const known = Object.values(PUBLIC_PATHS).join(', ');
  return sendError(
    reply,
    404,
    'NOT_FOUND',
    `No resource at ${pathOf(request.originalUrl)} (public endpoints: ${known}).`,
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
