import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ClientBase } from 'pg';
import { escapeIdentifier } from 'pg';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** A numbered PostgreSQL migration of the serving schema (`NNN_name.sql` in warehouse/postgres/migrations). */
interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

function listPgMigrations(): PgMigration[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, file.indexOf('_'))),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(`${MIGRATIONS_DIR}/${file}`, 'utf8'),
    }));
}

/**
 * Creates the serving schema when missing and applies every PostgreSQL migration it has not recorded in
 * its own `schema_migrations`, each in one transaction with its record. Two publishers at once wait for
 * each other (a transaction-scoped advisory lock on the schema's name). Leaves the session's
 * `search_path` at the schema. Idempotent; returns the versions applied.
 *
 * @throws the server's error (the caller maps it, publish-postgres.ts)
 */
export async function migratePostgres(client: ClientBase, schema: string): Promise<number[]> {
  const quoted = escapeIdentifier(schema);
  const applied: number[] = [];
  for (const m of listPgMigrations()) {
    await client.query('BEGIN');
    try {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`reports-sync:${schema}`]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
      await client.query(`SET LOCAL search_path TO ${quoted}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const done = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
      if (done.rowCount === 0) {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          m.version,
          m.name,
        ]);
        applied.push(m.version);
      }
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
  await client.query(`SET search_path TO ${quoted}`);
  return applied;
}
