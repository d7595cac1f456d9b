import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import type { Config, ConfigOverrides } from '../../src/config/config.js';
import { buildPostgresReader } from '../../src/reader/postgres/pg-reader.js';
import { buildReader } from '../../src/reader/server.js';
import { PUBLIC_PREFIX } from '../../src/schema/public-query.js';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import type { RunSummary } from '../../src/sync/run-sync.js';
import { silentLogger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { testDataset, type TestSimulatorOptions } from './simulator.js';
import { openTestWarehouse, syncOnce, tempDir, testConfig } from './sync.js';

/** A reader listening on 127.0.0.1 (free port), with `api(path)` for public paths. */
export interface TestReader {
  app: FastifyInstance;
  /** Base URL without trailing slash (`http://127.0.0.1:41234`). */
  url: string;
  api(path: string): string;
  close(): Promise<void>;
}

/** Builds the reader over `warehouse` and listens on 127.0.0.1, port 0. */
export async function startTestReader(warehouse: Warehouse, config: Config): Promise<TestReader> {
  const app = await buildReader({ warehouse, config, logger: silentLogger() });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return { app, url, api: (path) => `${url}${PUBLIC_PREFIX}${path}`, close: () => app.close() };
}

/** The simulator, a warehouse synced from it (NDJSON, the existing runner) and the reader over that warehouse. */
export interface SyncedReader {
  simulator: SimulatorHandle & { api(path: string): string };
  warehouse: Warehouse;
  config: Config;
  reader: TestReader;
  /** The sync run that filled the warehouse. */
  run: RunSummary;
  close(): Promise<void>;
}

/**
 * Serves a dataset from the simulator (default: fixture `small.ndjson`), syncs it into a fresh DuckDB file
 * in a temp folder with the NDJSON runner, and starts the reader on it. `close()` stops both servers and
 * removes the folder.
 *
 * @throws Error when the sync does not succeed (the tests would be meaningless)
 */
export async function startSyncedReader(
  dataset: TestSimulatorOptions = {},
  overrides: ConfigOverrides = {},
): Promise<SyncedReader> {
  const tmp = tempDir('reports-sync-reader-');
  const sim = await startSimulator({ dataset: await testDataset(dataset), faults: dataset.faults ?? [] });
  const simulator = Object.assign(sim, { api: (path: string) => `${sim.url}${PUBLIC_PREFIX}${path}` });
  const config = testConfig(sim.url, join(tmp.dir, 'warehouse.duckdb'), overrides);
  const warehouse = await openTestWarehouse(config);
  const run = await syncOnce(warehouse, config, ndjsonSource);
  if (run.status !== 'succeeded') {
    warehouse.close();
    await sim.close();
    tmp.cleanup();
    throw new Error(`the test sync failed: ${run.error?.message ?? run.status}`);
  }
  const reader = await startTestReader(warehouse, config);
  return {
    simulator,
    warehouse,
    config,
    reader,
    run,
    async close() {
      await reader.close();
      warehouse.close();
      await sim.close();
      tmp.cleanup();
    },
  };
}

/** Builds the reader on PostgreSQL over the serving schema `db` and listens on 127.0.0.1, port 0. */
export async function startTestPgReader(
  db: { url: string; schema: string },
  config: Config,
): Promise<TestReader> {
  const app = await buildPostgresReader({ ...db, config, logger: silentLogger() });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return { app, url, api: (path) => `${url}${PUBLIC_PREFIX}${path}`, close: () => app.close() };
}
