import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

describe('reports-sync sql --format json over the analyst views', () => {
  const tmp = tempDir();
  const path = join(tmp.dir, 'w.duckdb');
  let upstream: Array<Record<string, unknown>>;
  beforeAll(async () => {
    const sim = await startTestSimulator({ generate: { n: 200, seed: 5 } });
    try {
      const warehouse = await openTestWarehouse(testConfig(sim.url, path));
      expect((await syncOnce(warehouse, testConfig(sim.url, path), ndjsonSource)).status).toBe('succeeded');
      warehouse.close();
      const text = await (await fetch(`${sim.url}/api/v1/public/reports.ndjson`)).text();
      upstream = text
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    } finally {
      await sim.close();
    }
  }, 120_000);
  afterAll(() => tmp.cleanup());

  it('prints the header of an empty CSV result, and exits 2 saying so when the query holds no statement', async () => {
    const empty = await runCli([
      'sql',
      '--warehouse',
      path,
      'select id, status from reports where false',
      '--format',
      'csv',
    ]);
    expect([empty.code, empty.stdout]).toEqual([0, 'id,status\n']);
    const none = await runCli(['sql', '--warehouse', path, ' ; ']);
    expect(none.code).toBe(2); // a usage error, as every other argument the command cannot take
    expect(none.stderr).toMatch(/holds no statement/);
  });

  it('stops writing quietly when the reader of its output goes away (`| head`)', async () => {
    const cli = spawnCli(['sql', '--warehouse', path, 'SELECT range FROM range(200000)', '--format', 'csv']);
    await cli.waitFor(/range/);
    cli.child.stdout.destroy(); // as `head -1` does once it has its line
    const { code } = await cli.exited;
    expect(code).toBe(0);
    expect(cli.output().stderr).not.toMatch(/EPIPE|Error/);
  });

  it('prints JSON columns as JSON values, timestamps as ISO 8601 and counts as numbers', async () => {
    const r = await runCli(
      [
        'sql',
        `SELECT id, created_at, updated_at, extra, count(*) OVER () AS n,
           TIMESTAMP '2024-01-02 03:04:05.25' AS naive, '{"a":[1,{"b":null}]}'::JSON AS literal,
           '{"big":12345678901234567890123,"f":1.0}'::JSON AS exact
         FROM current_reports ORDER BY created_at, id`,
        '--format',
        'json',
      ],
      { REPORTS_WAREHOUSE: path },
    );
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(upstream.length);
    // A JSON value is written as stored: an integer past 2^53 not rounded, 1.0 not made 1.
    expect(r.stdout).toContain('"exact": {"big":12345678901234567890123,"f":1.0}');
    const byId = new Map(upstream.map((u) => [u.id, u]));
    for (const row of rows) {
      const source = byId.get(row.id);
      expect(row.n).toBe(upstream.length);
      // The same instant as the API's createdAt, in ISO 8601 UTC.
      expect(row.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      expect(Date.parse(row.created_at as string)).toBe(Date.parse(source?.createdAt as string));
      expect(row.extra === null || typeof row.extra === 'object').toBe(true);
      expect(row.naive).toBe('2024-01-02T03:04:05.25');
      expect(row.literal).toEqual({ a: [1, { b: null }] });
    }
  });

  it('writes CSV as the exports do: booleans as true/false, NULL an empty cell, the empty text ""', async () => {
    const sql = `SELECT true AS t, false AS f, NULL::BOOLEAN AS nb, '' AS e, NULL::VARCHAR AS nv, 'a,b' AS q`;
    const csv = await runCli(['sql', '--warehouse', path, sql, '--format', 'csv']);
    expect(csv.stdout).toBe('t,f,nb,e,nv,q\ntrue,false,,"",,"a,b"\n');
  });

  it.each(['Asia/Tokyo', 'America/Los_Angeles'])(
    'works in UTC on a machine in %s: dates, truncation and printed times agree with the API',
    async (zone) => {
      const sql = `SELECT TIMESTAMPTZ '2024-03-01 23:30:00+00' AS at,
        (TIMESTAMPTZ '2024-03-01 23:30:00+00')::DATE AS day,
        date_trunc('day', TIMESTAMPTZ '2024-03-01 23:30:00+00') AS midnight`;
      const env = { TZ: zone };
      const json = await runCli(['sql', '--warehouse', path, sql, '--format', 'json'], env);
      expect(JSON.parse(json.stdout)).toEqual([
        { at: '2024-03-01T23:30:00Z', day: '2024-03-01', midnight: '2024-03-01T00:00:00Z' },
      ]);
      const table = await runCli(['sql', '--warehouse', path, sql], env);
      expect(table.stdout).toMatch(/2024-03-01 23:30:00\+00 +2024-03-01 +2024-03-01 00:00:00\+00/);
    },
  );

  it('prints an INTERVAL as DuckDB writes it, in every format (not its months/days/micros parts)', async () => {
    const sql = `SELECT INTERVAL '9 days 08:04:00' AS d, INTERVAL '1 year 2 months' - INTERVAL '90 minutes' AS e`;
    const table = await runCli(['sql', '--warehouse', path, sql]);
    expect(table.stdout).toMatch(/9 days 08:04:00 +1 year 2 months -01:30:00/);
    const csv = await runCli(['sql', '--warehouse', path, sql, '--format', 'csv']);
    expect(csv.stdout).toBe('d,e\n9 days 08:04:00,1 year 2 months -01:30:00\n');
    const json = await runCli(['sql', '--warehouse', path, sql, '--format', 'json']);
    expect(JSON.parse(json.stdout)).toEqual([{ d: '9 days 08:04:00', e: '1 year 2 months -01:30:00' }]);
  });

  it('shows only business columns in current_reports and the versions in report_history', async () => {
    const r = await runCli(['sql', 'SELECT * FROM current_reports LIMIT 1', '--format', 'json'], {
      REPORTS_WAREHOUSE: path,
    });
    expect(Object.keys((JSON.parse(r.stdout) as object[])[0] ?? {})).toEqual([
      'id',
      'status',
      'destination',
      'category',
      'description',
      'lat',
      'lng',
      'address',
      'created_at',
      'updated_at',
      'extra',
    ]);
    const h = await runCli(
      [
        'sql',
        'SELECT count(*) AS n, bool_and(is_current) AS all_current FROM report_history',
        '--format',
        'json',
      ],
      { REPORTS_WAREHOUSE: path },
    );
    expect(JSON.parse(h.stdout)).toEqual([{ n: upstream.length, all_current: true }]);
  });
});
