import { onTermSignals } from './stop-signal.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { configFromFlags, withCommonOptions, type CommonFlags } from './common-options.js';

interface ServeFlags extends CommonFlags {
  port?: string;
  host?: string;
  postgres?: string;
}

/**
 * Registers `reports-sync serve [--port N] [--host H]`: the embedded reader (docs/reader.md) over the
 * warehouse until SIGINT/SIGTERM. Prints `listening on <base URL>` as the first stdout line, its one
 * announcement; request logs go to stderr (pino) at debug. The warehouse is opened (and migrated) by this
 * process, which then holds it: DuckDB allows one process per file, so run syncs inside the daemon
 * (`reports-sync run`) or stop the reader first. For the readers it locks out (`sql`, `status`, DuckDB
 * clients) it publishes the snapshot when the one there is missing or older than the last run
 * (serve-publish.ts).
 *
 * With `--postgres URL` (or REPORTS_POSTGRES_URL) it serves from that PostgreSQL instead, with no
 * warehouse file (serve-postgres.ts).
 *
 * Exit 2 for a bad `--port`/`--host` (`CONFIG_INVALID`), a missing warehouse file (`WAREHOUSE_MISSING`: it
 * is never created here), a locked warehouse (`WAREHOUSE_LOCKED`) or a port that cannot be bound
 * (`READER_LISTEN`).
 */
export function registerServe(program: Command): void {
  withCommonOptions(
    program
      .command('serve')
      .description(
        'Serve the public API shape (/api/v1/public: list, GeoJSON, CSV, NDJSON, stats) from the warehouse, ' +
          'plus /healthz and /metrics',
      )
      .option('--port <n>', 'TCP port, 0 = a free one (env REPORTS_PORT, default 8080)')
      .option('--host <host>', 'interface to bind (env REPORTS_HOST, default 127.0.0.1)')
      .option(
        '--postgres <url>',
        'serve from this PostgreSQL (its REPORTS_POSTGRES_SCHEMA, filled by publish-postgres) instead of the ' +
          'warehouse file (env REPORTS_POSTGRES_URL); stateless, so any number of replicas can run',
      ),
    { upstream: false },
  ).action(async (flags: ServeFlags) => {
    const { config, logger } = await configFromFlags(flags, {
      port: flags.port,
      host: flags.host,
      postgresUrl: flags.postgres,
    });
    if (config.postgresUrl !== undefined) {
      const { servePostgres } = await import('./serve-postgres.js');
      return servePostgres(config, logger, config.postgresUrl);
    }
    // Loaded here, not at the top: --help and the other commands do not pay for fastify and DuckDB.
    const [{ buildReader, listenQuietly }, { SyncError }, { openMigratedWarehouse }, { publishIfStale }] =
      await Promise.all([
        import('../reader/server.js'),
        import('../util/errors.js'),
        import('../warehouse/open-migrated.js'),
        import('./serve-publish.js'),
      ]);
    const path = resolve(config.warehouse);
    if (!existsSync(path)) {
      // Opening would create an empty warehouse that answers healthy with no data: a typo would go unseen.
      throw new SyncError(
        'WAREHOUSE_MISSING',
        `No warehouse at ${path}: serve reads an existing one and never creates it. Run \`reports-sync sync\` first, or pass --warehouse PATH (REPORTS_WAREHOUSE).`,
        { context: { path } },
      );
    }
    const warehouse = await openMigratedWarehouse(config);
    let app;
    try {
      app = await buildReader({ warehouse, config, logger });
      await listenQuietly(app, { port: config.port, host: config.host });
    } catch (err) {
      await app?.close();
      warehouse.close();
      if (err instanceof SyncError) throw err;
      throw new SyncError(
        'READER_LISTEN',
        `Cannot serve on ${config.host}:${config.port}: ${(err as Error).message}. Pick another --port or REPORTS_PORT.`,
        { cause: err, context: { host: config.host, port: config.port } },
      );
    }
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    const host = ['0.0.0.0', '::'].includes(config.host)
      ? '127.0.0.1'
      : config.host.includes(':')
        ? `[${config.host}]`
        : config.host;
    // In the background: the reader answers meanwhile (a publish of 1M reports takes tens of seconds).
    const publishing = publishIfStale(warehouse, logger);
    // The handlers are in place before the line that tells a supervisor (or a test) the reader is up.
    const stopped = new Promise<void>((done) => {
      const unsubscribe = onTermSignals((signal) => {
        unsubscribe();
        logger.info({ signal }, 'reader stopping');
        // A publish under way reads the warehouse: it ends first (a second signal kills the process, and
        // the next publish removes what it left).
        void app
          .close()
          .then(() => publishing)
          .finally(() => {
            warehouse.close();
            done();
          });
      });
    });
    // The one announcement (stdout, for people and supervisors); the log has the details at debug.
    process.stdout.write(`listening on http://${host}:${port}\n`);
    logger.debug({ url: `http://${host}:${port}`, warehouse: warehouse.path }, 'reader listening');
    await stopped;
    logger.flush?.();
  });
}
