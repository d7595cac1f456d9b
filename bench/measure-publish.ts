// Measures `publishSnapshot`: sync a dataset once into a fresh warehouse, then publish twice and
// print the time of the DuckDB copy and of the Parquet export, with the sizes written.
//
//   npm run build && node dist/bench/measure-publish.js                     # the real sample
//   npm run build && REPORTS_DUCKDB_MEMORY_LIMIT=1GiB node dist/bench/measure-publish.js --generate 1000000 \
//     --publish-memory-limit 256MiB   # 1M synthetic reports (the 1M merge needs more than the default 256MiB)
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadConfig } from '../src/config/config.js';
import { generateDataset } from '../src/simulator/generate.js';
import { loadDataset } from '../src/simulator/load-dataset.js';
import { startSimulator } from '../src/simulator/server.js';
import { syncTarget } from '../src/sync/sync-sources.js';
import { createHttpAgent } from '../src/upstream/http-agent.js';
import { silentLogger } from '../src/util/logger.js';
import { sampleDatasetPath } from '../src/util/package-root.js';
import { openMigratedWarehouse } from '../src/warehouse/open-migrated.js';
import { publishSnapshot } from '../src/warehouse/publish.js';

const at = process.argv.indexOf('--generate');
const n = at > 0 ? Number(process.argv[at + 1]) : undefined;
const dataset = n === undefined ? await loadDataset(sampleDatasetPath()) : generateDataset(n, 1);
const dir = mkdtempSync(join(tmpdir(), 'reports-sync-publish-'));
const sim = await startSimulator({ dataset });
const config = loadConfig(process.env, { baseUrl: sim.url, warehouse: join(dir, 'warehouse.duckdb') });
const warehouse = await openMigratedWarehouse(config);
const dispatcher = createHttpAgent(config);
try {
  const t0 = Date.now();
  const [run] = await syncTarget({ warehouse, config, dispatcher, logger: silentLogger(), target: 'ndjson' });
  const syncMs = Date.now() - t0;
  console.log(
    `dataset: ${n === undefined ? 'real sample' : `generated n=${n}`}; sync ${run?.status} in ${syncMs} ms, ` +
      `${run?.counters.recordsLoaded} records loaded; DuckDB memory_limit ${config.duckdbMemoryLimit}, threads ${config.duckdbThreads}`,
  );
  if (run?.status !== 'succeeded') {
    console.log(`sync error: ${run?.error?.code}: ${run?.error?.message}`);
    process.exitCode = 1;
  }
  const wal = `${warehouse.path}.wal`;
  console.log(
    `warehouse: ${mb(statSync(warehouse.path).size)} + WAL ${mb(existsSync(wal) ? statSync(wal).size : 0)}`,
  );
  const limitAt = process.argv.indexOf('--publish-memory-limit');
  if (limitAt > 0) {
    // Publish under another limit than the sync (e.g. the default 256MiB after a sync that needed more).
    const c = await warehouse.connect();
    await c.run(`SET memory_limit = '${String(process.argv[limitAt + 1]).replace(/'/g, '')}'`);
    c.closeSync();
    console.log(`publishing with memory_limit ${process.argv[limitAt + 1]}`);
  }
  for (const attempt of [1, 2]) {
    const started = Date.now();
    const result = await publishSnapshot(warehouse);
    const total = Date.now() - started;
    console.log(
      `publish #${attempt}: ${total} ms (DuckDB copy ${result.databaseMs} ms, Parquet ${result.parquetMs} ms); ` +
        `copy ${mb(statSync(result.databasePath).size)}, Parquet ${mb(folderBytes(result.parquetPath))}; ` +
        `reports ${result.tables.find((t) => t.name === 'reports')?.rows}`,
    );
  }
  // For comparison only (not what publishSnapshot does): CHECKPOINT, then copy the file's bytes.
  const started = Date.now();
  const c = await warehouse.connect();
  await c.run('CHECKPOINT');
  c.closeSync();
  const checkpointMs = Date.now() - started;
  const copyPath = join(dir, 'file-copy.duckdb');
  copyFileSync(warehouse.path, copyPath);
  const copyMs = Date.now() - started - checkpointMs;
  const check = await DuckDBInstance.create(copyPath, { access_mode: 'READ_ONLY' });
  const cc = await check.connect();
  const rows = (await cc.runAndReadAll('SELECT count(*) AS n FROM reports')).getRowObjectsJS()[0]?.n;
  cc.closeSync();
  check.closeSync();
  console.log(
    `for comparison, CHECKPOINT + file copy: ${checkpointMs + copyMs} ms (checkpoint ${checkpointMs} ms, ` +
      `copy ${copyMs} ms); ${mb(statSync(copyPath).size)}; reports ${String(rows)}`,
  );
} finally {
  await dispatcher.close();
  warehouse.close();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function folderBytes(path: string): number {
  let total = 0;
  for (const entry of readdirSync(path, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  }
  return total;
}
