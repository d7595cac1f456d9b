// One `publishSnapshot` of an existing warehouse, for the bench's `publish` step and bench/measure-publish.ts
// (run in its own process so its wall time and peak RSS are its own):
//   node dist/bench/publish-once.js <warehouse.duckdb> [--full]
// Prints one JSON line on stdout: mode, reason, change set, files, durations (ms).
import { loadConfig } from '../src/config/config.js';
import { openMigratedWarehouse } from '../src/warehouse/open-migrated.js';
import { publishSnapshot } from '../src/warehouse/publish.js';

const path = process.argv[2];
if (!path) throw new Error('usage: publish-once <warehouse.duckdb> [--full]');
const config = loadConfig(process.env, { warehouse: path });
const warehouse = await openMigratedWarehouse(config);
try {
  const started = Date.now();
  const r = await publishSnapshot(warehouse, undefined, {
    full: process.argv.includes('--full'),
    threads: config.duckdbMergeThreads,
  });
  const { mode, reason, changes, parquet, databaseMs, parquetMs, steps } = r;
  const reports = r.tables.find((t) => t.name === 'reports')?.rows;
  process.stdout.write(
    `${JSON.stringify({ mode, reason, changes, parquet, databaseMs, parquetMs, steps, totalMs: Date.now() - started, reports })}\n`,
  );
  process.stderr.write(`published (${mode}): DuckDB copy ${databaseMs} ms, Parquet ${parquetMs} ms\n`);
} finally {
  warehouse.close();
}
