import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { loadConfig, type Config, type ConfigOverrides } from '../../src/config/config.js';
import type { ExportSource } from '../../src/sync/export-source.js';
import { runSync, type RunSummary } from '../../src/sync/run-sync.js';
import type { RunSyncOptions } from '../../src/sync/run-types.js';
import { syncTarget, type SyncTarget } from '../../src/sync/sync-sources.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { silentLogger, type Logger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { openMigratedWarehouse } from '../../src/warehouse/open-migrated.js';

/** A fresh folder under the OS temp dir, removed by `cleanup()`. */
export function tempDir(prefix = 'reports-sync-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A config for tests: the given upstream and warehouse, short timeouts and retry delays. */
export function testConfig(baseUrl: string, warehouse: string, overrides: ConfigOverrides = {}): Config {
  return loadConfig(
    {},
    {
      baseUrl,
      warehouse,
      retryBaseMs: 10,
      retryMaxTimeMs: 5_000,
      bodyTimeoutMs: 5_000,
      headersTimeoutMs: 5_000,
      logLevel: 'silent',
      ...overrides,
    },
  );
}

/** Opens (and migrates) a real DuckDB warehouse file for a test. */
export async function openTestWarehouse(config: Config): Promise<Warehouse> {
  return openMigratedWarehouse(config);
}

/** Runs one sync of `source` on its own connection and returns its summary. */
export async function syncOnce(
  warehouse: Warehouse,
  config: Config,
  source: ExportSource,
  onProgress?: RunSyncOptions['onProgress'],
): Promise<RunSummary> {
  const connection = await warehouse.connect();
  const dispatcher = createHttpAgent(config);
  try {
    return await runSync({ connection, config, dispatcher, logger: silentLogger(), source, onProgress });
  } finally {
    connection.closeSync();
    await dispatcher.close();
  }
}

/**
 * Runs a sync target the way `reports-sync sync --source <target>` does (exports with their /stats snapshot
 * and tombstone step), each run on its own connection. Returns every run's summary.
 */
export async function syncTargetOnce(
  warehouse: Warehouse,
  config: Config,
  target: SyncTarget,
  logger: Logger = silentLogger(),
): Promise<RunSummary[]> {
  const dispatcher = createHttpAgent(config);
  try {
    return await syncTarget({ warehouse, config, dispatcher, logger, target });
  } finally {
    await dispatcher.close();
  }
}

/** A pino logger at `warn` whose lines are collected (parsed JSON) in `lines`. */
export async function capturingLogger(): Promise<{ logger: Logger; lines: Array<Record<string, unknown>> }> {
  const { pino } = await import('pino');
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

/** Runs a query and returns plain JS rows (BIGINT as number where safe). */
export async function query(
  warehouse: Warehouse | DuckDBConnection,
  sql: string,
  params?: Record<string, string | number | null>,
): Promise<Record<string, unknown>[]> {
  const owned = 'connect' in warehouse;
  const connection = owned ? await warehouse.connect() : warehouse;
  try {
    const rows = (await connection.runAndReadAll(sql, params)).getRowObjectsJS();
    return rows.map((r) =>
      Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])),
    );
  } finally {
    if (owned) connection.closeSync();
  }
}
