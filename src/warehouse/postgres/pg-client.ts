import pg from 'pg';
import { addSecret } from '../../util/redact.js';
import { SyncError, errorMessage } from '../../util/errors.js';

/**
 * Opens one PostgreSQL connection from a `postgres://` URL. libpq's URL parameters work as users expect
 * (`sslmode`, `sslrootcert`, `application_name`, `options`, the host in `?host=/socket/dir`): `pg` reads
 * them from the URL (pg-connection-string). The password is registered as a secret first, so no log line
 * or error shows it (util/redact.ts).
 *
 * @throws SyncError `POSTGRES_PUBLISH_FAILED` (retryable) when the server cannot be reached or refuses
 */
export async function connectPostgres(url: string, applicationName = 'reports-sync'): Promise<pg.Client> {
  registerPostgresSecret(url);
  const client = new pg.Client({
    connectionString: url,
    application_name: applicationName,
    connectionTimeoutMillis: 10_000,
  });
  // An idle client whose server goes away emits 'error': the next query rejects instead of the process dying.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw postgresError(err, 'cannot connect to PostgreSQL');
  }
  return client;
}

/** Registers the password of a `postgres://` URL as a secret (util/redact.ts). */
export function registerPostgresSecret(url: string): void {
  try {
    const parsed = new URL(url);
    addSecret(decodeURIComponent(parsed.password));
  } catch {
    // Not a URL: pg reports it when connecting; URL credentials are redacted in any text anyway.
  }
}

/** A {@link SyncError} `POSTGRES_PUBLISH_FAILED` (retryable) for an error of the server or the client. */
export function postgresError(err: unknown, doing: string): SyncError {
  const code = (err as { code?: unknown }).code;
  return new SyncError('POSTGRES_PUBLISH_FAILED', `${doing}: ${errorMessage(err)}`, {
    context: typeof code === 'string' ? { postgresCode: code } : {},
    retryable: true,
    cause: err,
  });
}
