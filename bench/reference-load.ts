// The reference of the benchmark: DuckDB's own `read_json` of the NDJSON file into a keyed, typed
// table, in a process of its own so its wall time and peak RSS are measured like ours.
// Usage: node dist/bench/reference-load.js <file.ndjson> <warehouse.duckdb> [memory_limit] [threads]
import { DuckDBInstance } from '@duckdb/node-api';

const [file, db, memoryLimit = '256MiB', threads = '2'] = process.argv.slice(2);
if (!file || !db) {
  process.stderr.write('usage: reference-load <file.ndjson> <warehouse.duckdb> [memory_limit] [threads]\n');
  process.exit(2);
}
const instance = await DuckDBInstance.create(db, { memory_limit: memoryLimit, threads });
const connection = await instance.connect();
await connection.run(`
  CREATE TABLE reports (
    id VARCHAR PRIMARY KEY, status VARCHAR NOT NULL, destination VARCHAR NOT NULL, category VARCHAR,
    description VARCHAR, lat DOUBLE, lng DOUBLE, address VARCHAR,
    created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, extra JSON)`);
const result = await connection.runAndReadAll(
  `INSERT INTO reports
   SELECT id, status, destination, category, description, location.lat, location.lng, address,
          createdAt, updatedAt, NULL
   FROM read_json($file, format = 'newline_delimited', columns = {
     id: 'VARCHAR', status: 'VARCHAR', destination: 'VARCHAR', category: 'VARCHAR', description: 'VARCHAR',
     location: 'STRUCT(lat DOUBLE, lng DOUBLE)', address: 'VARCHAR',
     createdAt: 'TIMESTAMPTZ', updatedAt: 'TIMESTAMPTZ'})`,
  { file },
);
process.stdout.write(`${JSON.stringify({ rows: Number(result.getRowsJS()[0]?.[0] ?? 0) })}\n`);
connection.closeSync();
instance.closeSync();
