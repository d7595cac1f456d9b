import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI, runCli } from '../helpers/cli.js';
import { waitUntil } from '../helpers/reliability.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncOnce, tempDir, testConfig } from '../helpers/sync.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { publishedPathFor } from '../../src/warehouse/open-migrated.js';

/** Starts `reports-sync serve` and resolves with its base URL once it printed "listening on …". */
function startServe(args: string[], env: Record<string, string>) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REPORTS_')));
  const child = spawn(process.execPath, [CLI, 'serve', ...args], {
    env: { ...base, REPORTS_LOG_PRETTY: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (\S+)\n/.exec(out);
      if (m) resolve(m[1] as string);
    });
    void exited.then((code) => reject(new Error(`serve exited ${code} before listening: ${stderr}`)));
  });
  return { child, url, exited, stderr: () => stderr };
}

describe('reports-sync serve', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(() => tmp.cleanup());

  it('serves the synced warehouse on the given port, announces itself once, logs requests at debug, and stops cleanly on SIGTERM', async () => {
    const sim = await startTestSimulator({ fixture: 'small.ndjson' });
    const path = join(tmp.dir, 'w.duckdb');
    const config = testConfig(sim.url, path, { maxRejectRatio: 0.5 });
    const warehouse = await openTestWarehouse(config);
    expect((await syncOnce(warehouse, config, ndjsonSource)).status).toBe('succeeded');
    warehouse.close();

    for (const level of ['info', 'debug']) {
      const serve = startServe(['--port', '0', '--warehouse', path], { REPORTS_LOG_LEVEL: level });
      const url = await serve.url;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const health = (await (await fetch(`${url}/healthz`)).json()) as { status: string };
      expect(health.status).toBe('ok');
      const list = (await (
        await fetch(`${url}/api/v1/public/reports?destination=ROAD_CONTROL`)
      ).json()) as Array<{
        destination: string;
      }>;
      expect(list.length).toBeGreaterThan(0);
      expect(list.every((r) => r.destination === 'ROAD_CONTROL')).toBe(true);
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
      const lines = serve.stderr().split('\n');
      // The one announcement is the stdout line; the log does not say it again (nor fastify's own line).
      expect(
        lines.filter((l) => /listening/i.test(l) && !l.includes('"level":"debug"')),
        level,
      ).toEqual([]);
      const logLine = lines.find((l) => l.includes('"msg":"request"') && l.includes('ROAD_CONTROL'));
      if (level === 'info') expect(logLine).toBeUndefined();
      else {
        expect(JSON.parse(logLine ?? '{}')).toMatchObject({
          level: 'debug',
          component: 'reader',
          method: 'GET',
          status: 200,
        });
      }
    }
  });

  it('while serve holds the warehouse: it publishes a copy that sql and status read, and sync and demo name serve and that copy', async () => {
    const sim = await startTestSimulator({ fixture: 'small.ndjson' });
    const path = join(tmp.dir, 'w.duckdb');
    const env = { REPORTS_WAREHOUSE: path, REPORTS_MAX_REJECT_RATIO: '0.5' };
    expect((await runCli(['sync', '--base-url', sim.url], env)).code).toBe(0);
    // Another warehouse in the same folder, published: its copy is not this one's.
    const sibling = { REPORTS_WAREHOUSE: join(tmp.dir, 'warehouse.duckdb') };
    const other = await startTestSimulator({ generate: { n: 4, seed: 3 } });
    expect((await runCli(['sync', '--base-url', other.url], sibling)).code).toBe(0);
    expect((await runCli(['publish'], sibling)).code).toBe(0);
    expect(existsSync(join(tmp.dir, 'published', 'warehouse.duckdb'))).toBe(true);
    const published = join(tmp.dir, 'published-w', 'warehouse.duckdb');
    expect(publishedPathFor(path)).toBe(published);
    expect(existsSync(published)).toBe(false);

    const serve = startServe(['--port', '0', '--warehouse', path], {});
    await serve.url;
    try {
      await waitUntil(() => existsSync(published) && /snapshot published/.test(serve.stderr()), 20_000);
      const holder = `reports-sync serve (PID ${serve.child.pid})`;

      const sql = await runCli(['sql', 'select count(*) as n from reports'], env);
      expect(sql.code, sql.stderr).toBe(0);
      expect(sql.stdout).toMatch(/^ *n\n-+\n *10\n$/);
      expect(sql.stderr).toContain(`is in use by ${holder}; reading the published copy ${published}`);

      const status = await runCli(['status'], env);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain(`is in use by ${holder}`);
      // The copy is current (published as serve started): the sync that ran shows, never as "never".
      expect(status.stdout).toMatch(/^sync-ndjson .*succeeded \d+ s ago/m);

      for (const args of [['sync', '--base-url', sim.url], ['demo']]) {
        const r = await runCli(args, env);
        expect(r.code, args[0]).toBe(2);
        expect(r.stderr).toContain(`The warehouse ${path} is in use by ${holder}`);
        expect(r.stderr).toContain(`open the read-only published copy ${published}`);
        expect(r.stderr).not.toMatch(/reports-sync run owns/);
        // The demo finds the lock before it starts its simulator.
        expect(r.stdout).not.toContain('No REPORTS_BASE_URL set');
      }
    } finally {
      serve.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
    }
  });

  it('refuses a bad --port with exit 2 naming the flag', async () => {
    const r = await runCli(['serve', '--port', 'eighty', '--warehouse', join(tmp.dir, 'w.duckdb')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--port="eighty" is not valid: expected a TCP port from 0 to 65535');
  });

  it('refuses a missing warehouse file with exit 2 and a clear message, and creates nothing', async () => {
    const path = join(tmp.dir, 'typo.duckdb');
    const r = await runCli(['serve', '--port', '0', '--warehouse', path]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`No warehouse at ${path}`);
    expect(r.stderr).toContain('reports-sync sync');
    expect(existsSync(path)).toBe(false);
  });

  it.each([
    ['publish'],
    ['publish', '--full'],
    ['publish-postgres', '--postgres', 'postgres://127.0.0.1:9/x'],
  ])(
    '`%s` of a missing warehouse file is refused with exit 2 and creates nothing (no empty snapshot)',
    async (...args) => {
      const path = join(tmp.dir, 'typo', 'w.duckdb');
      const r = await runCli([...args, '--warehouse', path]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`No warehouse at ${path}`);
      expect(existsSync(join(tmp.dir, 'typo'))).toBe(false);
    },
  );

  it('refuses a port already in use with exit 2 and says what to do', async () => {
    const path = join(tmp.dir, 'w.duckdb');
    for (const file of [path, join(tmp.dir, 'other.duckdb')]) {
      (await openTestWarehouse(testConfig('http://127.0.0.1:9', file))).close();
    }
    const first = startServe(['--port', '0', '--warehouse', path], {});
    const port = new URL(await first.url).port;
    try {
      const second = await runCli(['serve', '--port', port, '--warehouse', join(tmp.dir, 'other.duckdb')]);
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(/Cannot serve on 127\.0\.0\.1:\d+: .*Pick another --port/);
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  });
});
