import pg from 'pg';
import { parse, toClientConfig } from 'pg-connection-string';
import { addSecret } from '../../util/redact.js';
import { SyncError, errorMessage } from '../../util/errors.js';

/**
 * The connection settings of a `postgres://` URL with libpq's meaning of its parameters (`sslmode`,
 * `sslrootcert`, `sslcert`, `sslkey`, `application_name`, `options`, the host in `?host=/socket/dir`), as
 * `psql` reads them: `sslmode=require` encrypts without verifying the server (with `sslrootcert`: checks the
 * CA, as `verify-ca`), `verify-ca` checks the CA, `verify-full` the CA and the host name, `disable` sends
 * plain text. (pg's own reading treats `prefer`, `require` and `verify-ca` as `verify-full` and warns; its
 * `useLibpqCompat` option, documented by pg-connection-string, gives libpq's; `uselibpqcompat` in the URL
 * is left to decide.)
 *
 * @throws Error when the URL cannot be parsed or names a certificate file that cannot be read
 */
export function postgresClientConfig(url: string): pg.ClientConfig {
  const inUrl = /[?&]uselibpqcompat=/i.test(url);
  return toClientConfig(parse(url, { useLibpqCompat: !inUrl }));
}

/**
 * Opens one PostgreSQL connection from a `postgres://` URL, its parameters read as libpq reads them
 * ({@link postgresClientConfig}). The password is registered as a secret first, so no log line or error
 * shows it (util/redact.ts).
 *
 * @throws SyncError `POSTGRES_PUBLISH_FAILED` (retryable) when the server cannot be reached or refuses
 */
export async function connectPostgres(url: string, applicationName = 'reports-sync'): Promise<pg.Client> {
  registerPostgresSecret(url);
  let config: pg.ClientConfig;
  try {
    config = postgresClientConfig(url);
  } catch (err) {
    throw postgresError(err, 'cannot read REPORTS_POSTGRES_URL');
  }
  const client = new pg.Client({
    application_name: applicationName,
    ...config,
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
  try {
    await client.query(SESSION_SETTINGS);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw postgresError(err, 'cannot set the session of a PostgreSQL connection');
  }
  return client;
}

/**
 * Session settings every connection of this tool pins, whatever the database or role defaults: floats in
 * their shortest exact text (`extra_float_digits = 0` would serve 0.30000000000000004 as 0.3), ISO dates
 * in UTC (a `DateStyle` of `SQL, DMY` and a zone with local mean time made `created_at::text` read
 * `02/01/1800 20:03:58 LMT`, which no longer parsed back as a page anchor). Each is a plain `SET` every
 * PostgreSQL version takes.
 */
export const SESSION_SETTINGS =
  "SET extra_float_digits = 3; SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'";

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
