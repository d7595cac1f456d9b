import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Config } from '../config/config.js';
import { SyncError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import { registerDaemonMetrics, type DaemonInfo } from './daemon-metrics.js';

/** The daemon's HTTP server once listening. */
export interface HttpServer {
  /** `http://host:port` (the actual port when 0 was asked). */
  url: string;
  /** Stops accepting connections, lets requests in flight finish, closes idle keep-alive connections. */
  close(): Promise<void>;
  /** Destroys every open connection, requests in flight included (after the grace period). */
  closeAllConnections(): void;
}

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  warehouse: Warehouse;
  config: Config;
  logger: Logger;
  info: DaemonInfo;
  host: string;
  port: number;
}

/**
 * The HTTP side of `reports-sync run`, on the daemon's one DuckDB instance (DESIGN.md §6–§7). This module
 * is the one place the reader (issue 4) is plugged in; until it is, it serves
 * - `GET /healthz`: 200 `{"status":"ok","warehouse":"reachable","lastSuccessfulRun":{runId,job,finishedAt}|null}`
 *   when the warehouse answers a query, 503 `{"status":"unavailable","warehouse":"unreachable","error"}` otherwise
 *   (the reader's shape);
 * - `GET /metrics`: Prometheus text with the daemon's job gauges (`registerDaemonMetrics`) and process metrics.
 *
 * @throws SyncError `HTTP_LISTEN` (exit 2) when the port cannot be bound (in use, no permission)
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerDaemonMetrics(registry, options.info);
  const app = buildApp(options, registry);
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (err) {
    await app.close().catch(() => undefined);
    throw new SyncError(
      'HTTP_LISTEN',
      `Cannot listen on ${options.host}:${options.port}: ${errorMessage(err)}. Choose another --port (REPORTS_PORT) or --host (REPORTS_HOST).`,
      { exitCode: 2, context: { host: options.host, port: options.port }, cause: err },
    );
  }
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () => app.close(),
    closeAllConnections: () => app.server.closeAllConnections(),
  };
}

function buildApp(options: HttpServerOptions, registry: Registry) {
  const { warehouse } = options;
  const app = Fastify({
    loggerInstance: options.logger.child({ component: 'http' }),
    // Idle keep-alive connections are closed on shutdown, so close() does not wait for clients.
    forceCloseConnections: 'idle',
    requestTimeout: 30_000,
  });
  app.get('/healthz', async (_request, reply) => {
    try {
      const connection = await warehouse.connect();
      try {
        const row = (
          await connection.runAndReadAll(
            `SELECT run_id, job, epoch_ms(finished_at) AS finished FROM sync_runs
             WHERE status = 'succeeded' ORDER BY finished_at DESC LIMIT 1`,
          )
        ).getRowObjectsJS()[0];
        return {
          status: 'ok',
          warehouse: 'reachable',
          lastSuccessfulRun: row
            ? {
                runId: String(row.run_id),
                job: String(row.job),
                finishedAt: new Date(Number(row.finished)).toISOString(),
              }
            : null,
        };
      } finally {
        connection.closeSync();
      }
    } catch (err) {
      return reply.code(503).send({
        status: 'unavailable',
        warehouse: 'unreachable',
        error: { code: 'WAREHOUSE_UNREACHABLE', message: errorMessage(err) },
      });
    }
  });
  app.get('/metrics', async (_request, reply) =>
    reply.header('content-type', registry.contentType).send(await registry.metrics()),
  );
  return app;
}
