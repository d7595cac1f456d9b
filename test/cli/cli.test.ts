import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/sync.js';

describe('reports-sync CLI', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(() => tmp.cleanup());

  it('refuses a bad configuration value with exit 2, naming the variable and what is allowed', async () => {
    const r = await runCli(['sync'], {
      REPORTS_BASE_URL: 'http://127.0.0.1:9',
      REPORTS_BATCH_SIZE: 'lots',
      REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb'),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'REPORTS_BATCH_SIZE="lots" is not valid: expected an integer from 1 to 1000000',
    );
    expect(r.stderr).not.toMatch(/at .*\.js:\d+/); // no stack trace for a user error
  });

  it('refuses sync without an upstream with exit 2 and says what to set', async () => {
    const r = await runCli(['sync', '--warehouse', join(tmp.dir, 'w.duckdb')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('REPORTS_BASE_URL');
  });

  it('refuses an unknown option or source with exit 2', async () => {
    expect((await runCli(['sync', '--source', 'xml'])).code).toBe(2);
    expect((await runCli(['sync', '--frobnicate'])).code).toBe(2);
    for (const runs of ['abc', '0', '-1']) {
      const r = await runCli(['status', '--runs', runs]);
      expect([r.code, r.stderr.includes('expected a whole number of runs')], runs).toEqual([2, true]);
    }
  });

  it('builds an executable bin, so `npx reports-sync` works from a fresh clone', () => {
    expect(statSync(CLI).mode & 0o111).not.toBe(0);
  });

  it('prints help for every command', async () => {
    const top = await runCli(['--help']);
    expect(top.code).toBe(0);
    for (const command of ['sync', 'status', 'sql', 'simulate', 'demo', 'serve']) {
      expect(top.stdout).toContain(command);
      const help = await runCli([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout).toContain(`Usage: reports-sync ${command}`);
    }
  });

  it('runs npm start end to end offline: simulator + real sample + sync, then sql reads it', async () => {
    const warehouse = join(tmp.dir, 'w.duckdb');
    const demo = await runCli(['demo'], { REPORTS_WAREHOUSE: warehouse, REPORTS_LOG_LEVEL: 'warn' });
    expect(demo.stderr).toBe('');
    expect(demo.code).toBe(0);
    expect(demo.stdout).toMatch(/SUCCEEDED/);
    expect(demo.stdout).toMatch(/rejected records/);
    const sql = await runCli(['sql', 'select count(*) as n from reports', '--format', 'json'], {
      REPORTS_WAREHOUSE: warehouse,
    });
    expect(sql.code).toBe(0);
    const [{ n }] = JSON.parse(sql.stdout) as [{ n: string | number }];
    expect(Number(n)).toBeGreaterThan(6000);
    const status = await runCli(['status'], { REPORTS_WAREHOUSE: warehouse });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('succeeded');
    expect(status.stdout).toContain('ROAD_CONTROL');
  });

  it('refuses SQL that writes, since the warehouse is opened read-only', async () => {
    const warehouse = join(tmp.dir, 'w.duckdb');
    await runCli(['demo'], { REPORTS_WAREHOUSE: warehouse, REPORTS_LOG_LEVEL: 'silent' });
    const r = await runCli(['sql', 'delete from reports'], { REPORTS_WAREHOUSE: warehouse });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/read-only/i);
  });
});
