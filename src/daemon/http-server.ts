import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { Config } from '../config/config.js';
import { SyncError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import type { RunningJob } from './job-queue.js';

/** What the daemon tells `/healthz` about its jobs. */
export interface DaemonInfo {
  running(): RunningJob | undefined;
  pending(): string[];
}

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
 * The HTTP side of `reports-sync run`, on the daemon's one DuckDB instance (DESIGN.md §6–§7): the reader
 * (issue 4) when this build has it, plus `GET /healthz` — 200 `{status: "ok", warehouse, lastSuccessAt,
 * running, queued}` when the warehouse answers a query, 503 `{status: "error", error}` when it does not.
 * This module is the one place the reader is plugged in.
 *
 * @throws SyncError `HTTP_LISTEN` (exit 2) when the port cannot be bound (in use, no permission)
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const app = buildApp(options);
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

function buildApp(options: HttpServerOptions) {
  const { warehouse, info } = options;
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
            `SELECT epoch_ms(max(finished_at) FILTER (WHERE status = 'succeeded')) AS last_success FROM sync_runs`,
          )
        ).getRowObjectsJS()[0];
        const running = info.running();
        return {
          status: 'ok',
          warehouse: warehouse.path,
          lastSuccessAt:
            row?.last_success === null || row?.last_success === undefined
              ? null
              : new Date(Number(row.last_success)).toISOString(),
          running: running
            ? { job: running.job.name, reason: running.reason, startedAt: running.startedAt.toISOString() }
            : null,
          queued: info.pending(),
        };
      } finally {
        connection.closeSync();
      }
    } catch (err) {
      return reply.code(503).send({ status: 'error', error: errorMessage(err) });
    }
  });
  return app;
}
