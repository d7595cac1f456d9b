// One `publishSnapshot` of an existing warehouse, for the bench's `publish` step (run in its own process so
// its wall time and peak RSS are its own): `node dist/bench/publish-once.js <warehouse.duckdb>`.
import { loadConfig } from '../src/config/config.js';
import { openMigratedWarehouse } from '../src/warehouse/open-migrated.js';
import { publishSnapshot } from '../src/warehouse/publish.js';

const path = process.argv[2];
if (!path) throw new Error('usage: publish-once <warehouse.duckdb>');
const warehouse = await openMigratedWarehouse(loadConfig(process.env, { warehouse: path }));
try {
  const r = await publishSnapshot(warehouse);
  process.stderr.write(`published: DuckDB copy ${r.databaseMs} ms, Parquet ${r.parquetMs} ms\n`);
} finally {
  await warehouse.close();
}
