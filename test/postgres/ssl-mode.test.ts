import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgReaderPool } from '../../src/reader/postgres/pg-pool.js';
import { connectPostgres } from '../../src/warehouse/postgres/pg-client.js';
import { POSTGRES_REQUIRED, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';

// `sslmode` means what it means to psql (libpq): `require` encrypts without verifying the server,
// `verify-full` checks the certificate against `sslrootcert` and the host name, `disable` sends plain text.
// A server with a self-signed certificate, as many private deployments have.

let server: TestPostgres | undefined;
let startError: unknown;
beforeAll(async () => {
  try {
    server = await startTestPostgres({ ssl: true });
  } catch (err) {
    startError = err;
  }
});
afterAll(() => server?.close());

async function base(ctx: { skip: (note: string) => void }): Promise<{ url: string; cert: string }> {
  if (!server?.certFile) {
    if (POSTGRES_REQUIRED) throw startError;
    ctx.skip(`no PostgreSQL server with SSL: ${String(startError)}`);
  }
  return { url: (await server!.database()).url, cert: server!.certFile! };
}

/** Whether the publish connection for `url` is encrypted (pg_stat_ssl of its own backend). */
async function publishConnectionSsl(url: string): Promise<boolean> {
  const client = await connectPostgres(url);
  try {
    const { rows } = await client.query<{ ssl: boolean }>(
      'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
    );
    return rows[0]!.ssl;
  } finally {
    await client.end();
  }
}

/** The same for a connection of the reader's pool. */
async function readerConnectionSsl(url: string): Promise<boolean> {
  const pool = new PgReaderPool({ url, size: 1, acquireTimeoutMs: 5_000, queryTimeoutMs: 5_000 });
  try {
    return await pool.use(async (client) => {
      const { rows } = await client.query<{ ssl: boolean }>(
        'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
      );
      return rows[0]!.ssl;
    });
  } finally {
    await pool.close();
  }
}

describe('sslmode in REPORTS_POSTGRES_URL, as libpq reads it', () => {
  it('require: encrypted, a self-signed certificate accepted (publish and reader alike)', async (ctx) => {
    const { url } = await base(ctx);
    expect(await publishConnectionSsl(`${url}?sslmode=require`)).toBe(true);
    expect(await readerConnectionSsl(`${url}?sslmode=require`)).toBe(true);
  });

  it('verify-full: accepted with the server certificate as sslrootcert, refused without it', async (ctx) => {
    const { url, cert } = await base(ctx);
    expect(
      await publishConnectionSsl(`${url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(cert)}`),
    ).toBe(true);
    await expect(publishConnectionSsl(`${url}?sslmode=verify-full`)).rejects.toMatchObject({
      code: 'POSTGRES_PUBLISH_FAILED',
      message: expect.stringMatching(/certificate/i),
    });
  });

  it('disable: plain text', async (ctx) => {
    const { url } = await base(ctx);
    expect(await publishConnectionSsl(`${url}?sslmode=disable`)).toBe(false);
    expect(await readerConnectionSsl(`${url}?sslmode=disable`)).toBe(false);
  });
});
