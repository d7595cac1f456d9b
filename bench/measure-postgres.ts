// Measures the PostgreSQL publish against the DuckDB published copy on the same warehouse, in one process:
// sync a generated dataset, publish the DuckDB copy, publish to PostgreSQL (full), then a nightly-style day
// (the simulator advances one day: moved, new and unpublished reports) synced and published as changes, a
// `recent` run and its publish, and a publish with nothing new. Times are wall milliseconds on a shared
// machine: compare them as ratios within one run.
//
//   npm run build && REPORTS_DUCKDB_MEMORY_LIMIT=1GiB REPORTS_BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/bench \
//     node dist/bench/measure-postgres.js --generate 1000000 [--keep]   # --keep: leave the warehouse and schema
import { mkdtempSync, rmSync } from 'node:fs';
import type { DuckDBBlobValue } from '@duckdb/node-api';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config.js';
import { generateDataset } from '../src/simulator/generate.js';
import { startSimulator } from '../src/simulator/server.js';
import { syncTarget, type SyncTarget } from '../src/sync/sync-sources.js';
import { createHttpAgent } from '../src/upstream/http-agent.js';
import { silentLogger } from '../src/util/logger.js';
import { openMigratedWarehouse } from '../src/warehouse/open-migrated.js';
import { csvLineSql } from '../src/warehouse/postgres/copy-lines.js';
import { REPORT_ROWS } from '../src/warehouse/postgres/pg-tables.js';
import { publishToPostgres } from '../src/warehouse/postgres/publish-postgres.js';
import { publishSnapshot } from '../src/warehouse/publish.js';

const url = process.env.REPORTS_BENCH_POSTGRES_URL;
if (!url) throw new Error('set REPORTS_BENCH_POSTGRES_URL to a PostgreSQL database the bench may write to');
const at = process.argv.indexOf('--generate');
const n = at > 0 ? Number(process.argv[at + 1]) : 100_000;
const schema = `bench_${Date.now()}`;
const dir = mkdtempSync(join(tmpdir(), 'reports-sync-pg-bench-'));
const sim = await startSimulator({ dataset: generateDataset(n, 1) });
const config = loadConfig(process.env, { baseUrl: sim.url, warehouse: join(dir, 'warehouse.duckdb') });
const warehouse = await openMigratedWarehouse(config);
const dispatcher = createHttpAgent(config);
const timed = async <T>(label: string, fn: () => Promise<T>, describe: (r: T) => string) => {
  const started = Date.now();
  const result = await fn();
  console.log(`${label}: ${Date.now() - started} ms; ${describe(result)}`);
  return result;
};
const sync = (target: SyncTarget) =>
  timed(
    `sync ${target}`,
    () => syncTarget({ warehouse, config, dispatcher, logger: silentLogger(), target }),
    (runs) => runs.map((r) => `${r.status} ${JSON.stringify(r.counters)}`).join('; '),
  );
const pgPublish = (label: string) =>
  timed(
    label,
    () => publishToPostgres(warehouse, { url, schema }),
    (r) =>
      `${r.mode}${r.fullReason ? ` (${r.fullReason})` : ''}; reports ${r.tables.report_rows?.rows}, versions ${r.tables.report_versions_closed?.rows}`,
  );
/** The DuckDB half of a full publish of `report_rows`: the CSV lines made and read, nothing sent. */
async function linesOnly(): Promise<number> {
  const c = await warehouse.connect();
  try {
    const result = await c.stream(`SELECT ${csvLineSql(REPORT_ROWS.columns)} FROM report_rows`);
    let rows = 0;
    for (
      let chunk = await result.fetchChunk();
      chunk && chunk.rowCount > 0;
      chunk = await result.fetchChunk()
    ) {
      rows +=
        Buffer.concat((chunk.getColumnValues(0) as DuckDBBlobValue[]).map((b) => b.bytes)).length > 0
          ? chunk.rowCount
          : 0;
    }
    return rows;
  } finally {
    c.closeSync();
  }
}
try {
  console.log(`dataset: generated n=${n}; DuckDB memory_limit ${config.duckdbMemoryLimit}; schema ${schema}`);
  await sync('ndjson');
  await timed(
    'DuckDB published copy (publishSnapshot)',
    () => publishSnapshot(warehouse),
    (r) => `copy ${r.databaseMs} ms, Parquet ${r.parquetMs} ms`,
  );
  await timed(
    'DuckDB side alone: report_rows as COPY lines, discarded',
    () => linesOnly(),
    (rows) => `${rows} rows`,
  );
  await pgPublish('PostgreSQL first publish');
  const day = (await (await fetch(`${sim.url}/__admin/advance?days=1`, { method: 'POST' })).json()) as object;
  console.log(`advanced one day: ${JSON.stringify(day)}`);
  await sync('ndjson');
  await pgPublish('PostgreSQL publish after the nightly run');
  await fetch(`${sim.url}/__admin/advance?days=1`, { method: 'POST' });
  await sync('recent');
  await pgPublish('PostgreSQL publish after a recent run');
  await pgPublish('PostgreSQL publish with nothing new');
} finally {
  await dispatcher.close();
  warehouse.close();
  await sim.close();
  if (!process.argv.includes('--keep')) rmSync(dir, { recursive: true, force: true });
  else console.log(`warehouse kept: ${join(dir, 'warehouse.duckdb')}; PostgreSQL schema ${schema}`);
}
