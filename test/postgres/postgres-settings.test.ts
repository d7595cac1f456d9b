import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { runCli } from '../helpers/cli.js';

describe('the PostgreSQL settings', () => {
  it('refuse a URL that is not postgres:// and a schema name PostgreSQL would need quoted, saying what to write', () => {
    expect(() => loadConfig({}, { postgresUrl: 'mysql://u@h/db' })).toThrow(/--postgres.*postgres:\/\//s);
    expect(() => loadConfig({ REPORTS_POSTGRES_SCHEMA: 'reports-sync' })).toThrow(
      /REPORTS_POSTGRES_SCHEMA.*letters, digits and _/s,
    );
    expect(loadConfig({}).postgresSchema).toBe('reports_sync');
    expect(loadConfig({ REPORTS_POSTGRES_URL: 'postgresql://h/db?sslmode=require' }).postgresUrl).toBe(
      'postgresql://h/db?sslmode=require',
    );
  });

  it('never print the password: `reports-sync config` and a refused value show it redacted', async () => {
    const env = { REPORTS_POSTGRES_URL: 'postgres://reader:s3cret-Passw0rd@db.example.org/reports' };
    const shown = await runCli(['config', '--json'], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toContain('s3cret-Passw0rd');
    expect(shown.stdout).toContain('REPORTS_POSTGRES_URL');
    const refused = await runCli(['publish-postgres'], { ...env, REPORTS_POSTGRES_SCHEMA: '1bad' });
    expect(refused.code).toBe(2);
    expect(refused.stderr + refused.stdout).not.toContain('s3cret-Passw0rd');
  });

  it('publish-postgres without a URL says how to give one (exit 2)', async () => {
    const result = await runCli(['publish-postgres']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/REPORTS_POSTGRES_URL or pass --postgres/);
  });
});
