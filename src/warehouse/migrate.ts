import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DuckDBConnection } from '@duckdb/node-api';
import { recomputeCsvHashes } from './csv-hash-upgrade.js';
import { withTransaction } from './transaction.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** A numbered SQL migration file (`NNN_name.sql`). */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The migrations shipped with this version, ascending. */
export function listMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, file.indexOf('_'))),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(`${dir}/${file}`, 'utf8'),
    }));
}

/**
 * Work of a migration that SQL cannot do, run after its SQL in the same transaction (by version).
 * - 014: the CSV projection compares values, not cell text: every stored projection hash is computed again.
 */
const DATA_STEPS: Record<number, (connection: DuckDBConnection) => Promise<unknown>> = {
  14: recomputeCsvHashes,
};

/**
 * Applies every migration not yet recorded in `schema_migrations`, each in its own transaction with its
 * record (and its data step, {@link DATA_STEPS}), so a crash leaves the schema at a known version.
 * Idempotent. Returns the versions applied.
 */
export async function migrate(connection: DuckDBConnection): Promise<number[]> {
  await connection.run(
    `CREATE TABLE IF NOT EXISTS schema_migrations (
       version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
  );
  const done = new Set(
    (await connection.runAndReadAll('SELECT version FROM schema_migrations'))
      .getRowObjectsJS()
      .map((r) => Number(r.version)),
  );
  const applied: number[] = [];
  for (const m of listMigrations()) {
    if (done.has(m.version)) continue;
    await withTransaction(connection, async (c) => {
      await c.run(m.sql);
      await DATA_STEPS[m.version]?.(c);
      await c.run('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    });
    applied.push(m.version);
  }
  return applied;
}
