import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type { Config } from '../config/config.js';
import { SyncError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { Warehouse } from '../warehouse/database.js';
import { buildReader, listenQuietly } from '../reader/server.js';
import { collectProcessMetrics } from '../reader/reader-metrics.js';
import type { ScheduledJob } from '../reader/status-html.js';
import { nextRuns, schedulePeriodMs } from './cron-times.js';
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

/** The jobs' schedule as the status page shows it, now: next runs, periods and freshness objectives. */
function scheduleOf(info: DaemonInfo): { timezone: string; jobs: ScheduledJob[] } {
  const objectives = info.freshnessObjectives?.() ?? new Map<string, number>();
  return {
    timezone: info.timezone,
    jobs: info.jobs.map((job) => ({
      job: job.name,
      schedule: job.schedule,
      nextMs: job.enabled ? (nextRuns(job.schedule, info.timezone, 1)[0]?.getTime() ?? null) : null,
      periodMs: job.enabled ? schedulePeriodMs(job.schedule, info.timezone) : null,
      objectiveMs: objectives.get(job.name) ?? null,
      disabledReason: job.disabledReason,
    })),
  };
}

/**
 * The HTTP side of `reports-sync run`: the reader (`buildReader`) on the daemon's one DuckDB
 * instance (docs/how-a-sync-works.md) — the public endpoints under `/api/v1/public`, the status page at `/` (open
 * alerts, job freshness against each job's objective, schedule and next runs) and the run pages, `GET /healthz` (from memory: 200 ok or degraded, 503
 * when the warehouse is broken) and `GET /metrics`, where the daemon's job gauges
 * (`registerDaemonMetrics`) join the reader's run-log metrics and the process metrics in one registry.
 *
 * @throws SyncError `HTTP_LISTEN` (exit 2) when the port cannot be bound (in use, no permission)
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const registry = new Registry();
  collectProcessMetrics(registry);
  registerDaemonMetrics(registry, options.info);
  const app = await buildReader({
    warehouse: options.warehouse,
    config: options.config,
    logger: options.logger,
    registry,
    schedule: () => scheduleOf(options.info),
  });
  try {
    await listenQuietly(app, { host: options.host, port: options.port });
  } catch (err) {
    await app.close().catch(() => undefined);
    throw new SyncError(
      'HTTP_LISTEN',
      `Cannot listen on ${options.host}:${options.port}: ${errorMessage(err)}. Choose another --port (REPORTS_PORT) or --host (REPORTS_HOST).`,
      { context: { host: options.host, port: options.port }, cause: err },
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
