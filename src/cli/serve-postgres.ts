import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.js';
import type { Logger } from '../util/logger.js';

/**
 * `reports-sync serve --postgres URL`: the reader on PostgreSQL (reader/postgres/pg-reader.ts) until
 * SIGINT/SIGTERM, announced by `listening on <base URL>` on stdout. No warehouse file is opened, so it
 * runs beside `reports-sync run` and in any number of replicas. A PostgreSQL that is down at start does
 * not stop it: `/healthz` answers 503 and the API 503 with `Retry-After` until the server answers.
 *
 * @throws SyncError `READER_LISTEN` (exit 2) when the port cannot be bound
 */
export async function servePostgres(config: Config, logger: Logger, url: string): Promise<void> {
  const [{ buildPostgresReader }, { listenQuietly }, { SyncError }] = await Promise.all([
    import('../reader/postgres/pg-reader.js'),
    import('../reader/http-shell.js'),
    import('../util/errors.js'),
  ]);
  let app: FastifyInstance | undefined;
  try {
    app = await buildPostgresReader({ url, schema: config.postgresSchema, config, logger });
    await listenQuietly(app, { port: config.port, host: config.host });
  } catch (err) {
    await app?.close();
    if (err instanceof SyncError) throw err;
    throw new SyncError(
      'READER_LISTEN',
      `Cannot serve on ${config.host}:${config.port}: ${(err as Error).message}. Pick another --port or REPORTS_PORT.`,
      { cause: err, context: { host: config.host, port: config.port } },
    );
  }
  const reader = app;
  const address = reader.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = ['0.0.0.0', '::'].includes(config.host) ? '127.0.0.1' : config.host;
  const stopped = new Promise<void>((done) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      logger.info({ signal }, 'reader stopping');
      void reader.close().finally(done);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  process.stdout.write(`listening on http://${host.includes(':') ? `[${host}]` : host}:${port}\n`);
  logger.debug(
    { url: `http://${host}:${port}`, schema: config.postgresSchema },
    'reader on PostgreSQL listening',
  );
  await stopped;
  logger.flush?.();
}
