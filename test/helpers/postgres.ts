import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, type TestContext } from 'vitest';

/** A PostgreSQL server for tests: a URL per test database, and control of the server it runs on. */
export interface TestPostgres {
  /** A fresh database on the server (or a fresh schema name on a given server): its URL and schema. */
  database(): Promise<{ url: string; schema: string }>;
  /** The server's self-signed certificate (PEM), when it was started with `ssl`. */
  certFile?: string | undefined;
  /** Stops the server at once (`pg_ctl stop -m immediate`); only for a server the suite started. */
  stop?(): void;
  /** Starts it again after {@link stop}. */
  start?(): void;
  close(): void;
}

const BIN_ROOT = '/usr/lib/postgresql';

/** The folder of Debian's `initdb`/`pg_ctl` (the newest version installed), if any. */
function binDir(): string | undefined {
  if (!existsSync(BIN_ROOT)) return undefined;
  const versions = readdirSync(BIN_ROOT).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => join(BIN_ROOT, v, 'bin')).find((d) => existsSync(join(d, 'initdb')));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

let counter = 0;

/**
 * A throwaway PostgreSQL server for a test file: `REPORTS_TEST_POSTGRES_URL` when set (each test gets its
 * own schema there), else Debian's `initdb` + `pg_ctl` on a free port with the socket and data in a temp
 * folder (as root, run as the `postgres` user, which owns that folder). Throws when neither works: the
 * caller skips, except in CI (`CI=true`), where the test fails.
 */
export async function startTestPostgres(options: { ssl?: boolean } = {}): Promise<TestPostgres> {
  const given = process.env.REPORTS_TEST_POSTGRES_URL;
  if (given && !options.ssl) {
    return {
      database: async () => ({ url: given, schema: `rs_test_${process.pid}_${++counter}` }),
      close: () => undefined,
    };
  }
  const bin = binDir();
  if (!bin) throw new Error(`no PostgreSQL server binaries under ${BIN_ROOT}: apt-get install postgresql`);
  const dir = mkdtempSync(join(tmpdir(), 'reports-sync-pg-'));
  chmodSync(dir, 0o755);
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const run = (tool: string, args: string[]) => {
    const path = tool === 'openssl' ? 'openssl' : join(bin, tool);
    const cmd = asRoot ? 'runuser' : path;
    const argv = asRoot ? ['-u', 'postgres', '--', path, ...args] : args;
    const res = spawnSync(cmd, argv, { encoding: 'utf8', cwd: dir });
    if (res.status !== 0) throw new Error(`${tool} failed: ${res.stderr || res.stdout}`);
  };
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--locale=C']);
  const port = await freePort();
  let serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off`;
  const certFile = join(dir, 'server.crt');
  if (options.ssl) {
    // A self-signed certificate for 127.0.0.1 and localhost, its key readable by the server only.
    const keyFile = join(dir, 'server.key');
    const req = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost'];
    const san = ['-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'];
    run('openssl', [...req, ...san, '-keyout', keyFile, '-out', certFile]);
    chmodSync(keyFile, 0o600);
    serverOptions += ` -c ssl=on -c ssl_cert_file=${certFile} -c ssl_key_file=${keyFile}`;
  }
  const start = () => run('pg_ctl', ['-D', data, '-o', serverOptions, '-l', join(dir, 'log'), '-w', 'start']);
  start();
  const admin = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    async database() {
      const name = `rs_test_${++counter}`;
      const client = new pg.Client({ connectionString: admin });
      await client.connect();
      await client.query(`CREATE DATABASE ${name}`);
      await client.end();
      return { url: `postgres://postgres@127.0.0.1:${port}/${name}`, schema: 'reports_sync' };
    },
    stop: () => run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']),
    start,
    certFile: options.ssl ? certFile : undefined,
    close() {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether tests must fail (not skip) when no PostgreSQL server can be started. */
export const POSTGRES_REQUIRED = process.env.CI === 'true';

/**
 * One PostgreSQL server for a test file: started in `beforeAll`, stopped in `afterAll`. `database(ctx)`
 * gives a test its own database; without a server it fails the test in CI and skips it elsewhere.
 */
export function postgresForSuite(): {
  database(ctx: TestContext): Promise<{ url: string; schema: string }>;
  server(): TestPostgres | undefined;
} {
  let server: TestPostgres | undefined;
  let startError: unknown;
  beforeAll(async () => {
    try {
      server = await startTestPostgres();
    } catch (err) {
      startError = err;
    }
  });
  afterAll(() => server?.close());
  return {
    async database(ctx) {
      if (!server) {
        if (POSTGRES_REQUIRED) throw startError;
        ctx.skip(`no PostgreSQL server: ${String(startError)}`);
      }
      return server!.database();
    },
    server: () => server,
  };
}
