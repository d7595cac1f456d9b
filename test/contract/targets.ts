import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startSimulator } from '../../src/simulator/server.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import type { AddressInfo } from 'node:net';
import { buildPostgresReader } from '../../src/reader/postgres/pg-reader.js';
import { silentLogger } from '../../src/util/logger.js';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { POSTGRES_REQUIRED, startTestPostgres } from '../helpers/postgres.js';
import { startSyncedReader } from '../helpers/reader.js';

/** A running server that plays the public API: its base URL (no trailing slash) and how to stop it. */
export interface RunningApi {
  baseUrl: string;
  close(): Promise<void>;
}

/** A server the contract suite runs against, by name, and its `baseUrl` factory. */
export interface ApiTarget {
  name: 'simulator' | 'reader' | 'postgres-reader';
  start(): Promise<RunningApi>;
}

/**
 * The implementations of the public API, all over the real sample (`data/sample/reports.ndjson`): the
 * simulator serving it, the reader serving a warehouse synced from that simulator with the NDJSON runner,
 * and the reader on PostgreSQL serving that warehouse published to a throwaway server (test/helpers/
 * postgres.ts; in CI a server that cannot start fails the suite). One set of contract assertions runs
 * against each.
 */
export const API_TARGETS: ApiTarget[] = [
  {
    name: 'simulator',
    async start() {
      const sim = await startSimulator({ dataset: await loadDataset(sampleDatasetPath()) });
      return { baseUrl: sim.url, close: () => sim.close() };
    },
  },
  {
    name: 'reader',
    async start() {
      const synced = await startSyncedReader({ dataset: await loadDataset(sampleDatasetPath()) });
      return { baseUrl: synced.reader.url, close: () => synced.close() };
    },
  },
  {
    name: 'postgres-reader',
    async start() {
      const synced = await startSyncedReader({ dataset: await loadDataset(sampleDatasetPath()) });
      let server;
      try {
        server = await startTestPostgres();
      } catch (err) {
        await synced.close();
        if (POSTGRES_REQUIRED) throw err;
        throw new Error(`no PostgreSQL server for the contract suite: ${String(err)}`);
      }
      const db = await server.database();
      await publishToPostgres(synced.warehouse, db);
      const app = await buildPostgresReader({ ...db, config: synced.config, logger: silentLogger() });
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      return {
        baseUrl: `http://127.0.0.1:${port}`,
        async close() {
          await app.close();
          await synced.close();
          server.close();
        },
      };
    },
  },
];
