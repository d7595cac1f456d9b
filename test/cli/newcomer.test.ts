import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/util/package-root.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, tempDir, testConfig } from '../helpers/sync.js';

const openWarehouseForTest = (path: string) => openTestWarehouse(testConfig('http://127.0.0.1:9', path));

const VERSION = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string })
  .version;

describe('the CLI a newcomer meets', () => {
  let tmp: ReturnType<typeof tempDir>;
  let warehouse: string;
  beforeEach(() => {
    tmp = tempDir();
    warehouse = join(tmp.dir, 'w.duckdb');
  });
  afterEach(() => tmp.cleanup());

  it('prints its version with --version and -V', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${VERSION}\n`);
    }
  });

  it('sync --json and status --json print one parseable document with the counters and rejects', async () => {
    // The fixture holds bad records: they are quarantined, the run succeeds.
    const sim = await startTestSimulator({ fixture: 'small.ndjson' });
    const sync = await runCli(['sync', '--json'], {
      REPORTS_MAX_REJECT_RATIO: '1',
      REPORTS_BASE_URL: sim.url,
      REPORTS_WAREHOUSE: warehouse,
    });
    expect(sync.code).toBe(0);
    const doc = JSON.parse(sync.stdout) as {
      runs: {
        status: string;
        counters: { recordsRead: number; recordsRejected: number };
        rejectsByReason: { reason: string; records: number }[];
      }[];
      warehouse: { currentReports: number };
    };
    expect(doc.runs).toHaveLength(1);
    const [run] = doc.runs;
    expect(run!.status).toBe('succeeded');
    expect(run!.counters.recordsRejected).toBeGreaterThan(0);
    expect(run!.rejectsByReason.reduce((n, r) => n + r.records, 0)).toBe(run!.counters.recordsRejected);
    expect(doc.warehouse.currentReports).toBe(run!.counters.recordsRead - run!.counters.recordsRejected);
    // Everything the text summary says: the tombstone decision, the /stats difference, not-modified.
    const facts = doc.runs[0] as unknown as {
      notModified: boolean;
      tombstones?: string;
      stats?: { upstreamTotal: number; warehouseTotal: number; difference: number };
    };
    expect(facts.notModified).toBe(false);
    expect(facts.tombstones).toMatch(/complete export/);
    expect(facts.stats).toEqual({
      upstreamTotal: doc.warehouse.currentReports,
      warehouseTotal: doc.warehouse.currentReports,
      difference: 0,
    });

    const status = await runCli(['status', '--json'], { REPORTS_WAREHOUSE: warehouse });
    expect(status.code).toBe(0);
    const s = JSON.parse(status.stdout) as {
      runs: { status: string; read: number }[];
      totals: { current: number };
    };
    expect(s.runs[0]).toMatchObject({ status: 'succeeded', read: run!.counters.recordsRead });
    expect(s.totals.current).toBe(doc.warehouse.currentReports);
    const text = await runCli(['sync'], {
      REPORTS_MAX_REJECT_RATIO: '1',
      REPORTS_BASE_URL: sim.url,
      REPORTS_WAREHOUSE: warehouse,
    });
    expect(text.stdout).toContain('export not modified (304)');
    const again = JSON.parse(
      (
        await runCli(['sync', '--json'], {
          REPORTS_MAX_REJECT_RATIO: '1',
          REPORTS_BASE_URL: sim.url,
          REPORTS_WAREHOUSE: warehouse,
        })
      ).stdout,
    ) as { runs: { notModified: boolean; status: string }[] };
    expect(again.runs[0]).toMatchObject({ status: 'succeeded', notModified: true });
  });

  it('config shows variable names, and no credentials of the base URL or the API key', async () => {
    const r = await runCli(['config'], {
      REPORTS_BASE_URL: 'https://alice:s3cr3t-pass@reports.example.org/base?token=t0k3n',
      REPORTS_API_KEY: 'k3y-value',
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^REPORTS_BASE_URL +https:\/\/reports\.example\.org\/base\?token=%5Bredacted%5D/m,
    );
    expect(r.stdout).toMatch(/^REPORTS_API_KEY +\[redacted\]/m);
    expect(r.stdout).toMatch(/^REPORTS_WAREHOUSE +data\/warehouse\.duckdb$/m);
    for (const secret of ['alice', 's3cr3t', 't0k3n', 'k3y-value']) expect(r.stdout).not.toContain(secret);
    expect(r.stdout).not.toMatch(/baseUrl|apiKey/); // variable names, not config keys
    const json = JSON.parse(
      (await runCli(['config', '--json'], { REPORTS_API_KEY: 'k3y-value' })).stdout,
    ) as Record<string, unknown>;
    expect(json.REPORTS_API_KEY).toBe('[redacted]');
  });

  it('config takes --base-url and --warehouse, lists every job schedule variable, and reads the former publish interval name with a warning', async () => {
    const r = await runCli(['config', '--base-url', 'http://flag.example.org', '--warehouse', warehouse], {
      REPORTS_BASE_URL: 'http://env.example.org',
      REPORTS_SCHEDULE_SYNC_CSV: 'off',
      REPORTS_SCHEDULE_SYNC_NDJSON: '0 */6 * * *',
      REPORTS_PUBLISH_MIN_INTERVAL: '5000',
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^REPORTS_BASE_URL +http:\/\/flag\.example\.org +\(--base-url\)$/m);
    const line = r.stdout.split('\n').find((l) => l.startsWith('REPORTS_WAREHOUSE '));
    expect(line?.split(/ {2,}/)).toEqual(['REPORTS_WAREHOUSE', warehouse, '(--warehouse)']);
    expect(r.stdout).toMatch(/^REPORTS_SCHEDULE_SYNC_NDJSON +0 \*\/6 \* \* \* +\(environment\)$/m);
    expect(r.stdout).toMatch(/^REPORTS_SCHEDULE_SYNC_CSV +off +\(environment\)$/m);
    expect(r.stdout).toMatch(/^REPORTS_SCHEDULE_SYNC_RECENT +\*\/10 \* \* \* \*$/m);
    expect(r.stdout).toMatch(/^REPORTS_SCHEDULE_SNAPSHOT_STATS +15 \* \* \* \*$/m);
    expect(r.stdout).toMatch(/^REPORTS_PUBLISH_MIN_INTERVAL_MS +5000 +\(environment\)$/m);
    expect(r.stderr).toContain(
      'REPORTS_PUBLISH_MIN_INTERVAL is the former name of REPORTS_PUBLISH_MIN_INTERVAL_MS',
    );
    expect(r.stderr).not.toMatch(/not a setting/);
    const both = await runCli(['config', '--json'], {
      REPORTS_PUBLISH_MIN_INTERVAL: '5000',
      REPORTS_PUBLISH_MIN_INTERVAL_MS: '7000',
    });
    expect((JSON.parse(both.stdout) as Record<string, unknown>).REPORTS_PUBLISH_MIN_INTERVAL_MS).toBe(7000);
    expect(both.stderr).toContain('REPORTS_PUBLISH_MIN_INTERVAL is ignored');
  });

  it('sql refuses an empty query and an unknown option with exit 2, and takes a query that starts with a comment', async () => {
    (await openWarehouseForTest(warehouse)).close();
    for (const args of [
      ['sql', '-x'],
      ['sql', ' '],
    ]) {
      const r = await runCli([...args, '--warehouse', warehouse]);
      expect(r.code, args.join(' ')).toBe(2);
    }
    const commented = await runCli(['sql', '-- a comment\nselect 42 as answer', '--warehouse', warehouse]);
    expect([commented.code, commented.stdout]).toEqual([0, 'answer\n------\n    42\n']);
  });

  it('status and sql on a missing warehouse exit 2 with one line naming the file and how to create it', async () => {
    for (const args of [['status'], ['sql', 'select 1']]) {
      const r = await runCli([...args, '--warehouse', warehouse]);
      expect(r.code, args[0]).toBe(2);
      expect(r.stderr.trim().split('\n'), args[0]).toHaveLength(1);
      expect(r.stderr).toContain(warehouse);
      expect(r.stderr).toContain('reports-sync sync');
    }
    expect(existsSync(warehouse)).toBe(false); // not created by looking
  });

  it('sql runs every statement, shows NULL, aligns numbers right; one-result formats refuse several', async () => {
    const sim = await startTestSimulator({ fixture: 'small.ndjson' });
    expect(
      (
        await runCli(['sync'], {
          REPORTS_BASE_URL: sim.url,
          REPORTS_WAREHOUSE: warehouse,
          REPORTS_MAX_REJECT_RATIO: '1',
        })
      ).code,
    ).toBe(0);
    const env = { REPORTS_WAREHOUSE: warehouse };
    const r = await runCli(
      [
        'sql',
        "select 'a;b' as t, 7 as n, NULL::VARCHAR as missing; select 12345 as n, 'x' as t union all select 3, 'y'",
      ],
      env,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        't    n  missing',
        '---  -  -------',
        'a;b  7  NULL',
        '',
        '    n  t',
        '-----  -',
        '12345  x',
        '    3  y',
        '',
      ].join('\n'),
    );
    const json = await runCli(['sql', 'select 1; select 2', '--format', 'json'], env);
    expect(json.code).toBe(2);
    expect(json.stderr).toContain('2 statements');
  });

  it('sends User-Agent reports-sync/<version> upstream, through HTTP_PROXY when set', async () => {
    const sim = await startTestSimulator({ fixture: 'small.ndjson' });
    // A forward proxy as undici uses one: a CONNECT tunnel to the target.
    const tunnels: string[] = [];
    const proxy = createServer((_req, res) => res.writeHead(405).end());
    proxy.on('connect', (req, client: Socket, head: Buffer) => {
      tunnels.push(req.url ?? '');
      const [host, port] = (req.url ?? '').split(':');
      const target = connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        target.write(head);
        target.pipe(client);
        client.pipe(target);
      });
      target.on('error', () => client.destroy());
      client.on('error', () => target.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const r = await runCli(['sync'], {
        REPORTS_BASE_URL: sim.url,
        REPORTS_WAREHOUSE: warehouse,
        REPORTS_MAX_REJECT_RATIO: '1',
        HTTP_PROXY: proxyUrl,
        NO_PROXY: '',
      });
      expect(r.code).toBe(0);
      expect(tunnels).toContain(new URL(sim.url).host);
      const agents = new Set(sim.requests().map((q) => q.headers['user-agent']));
      expect([...agents]).toEqual([`reports-sync/${VERSION}`]);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it.each([
    ['SIGINT', 130, 'text'],
    ['SIGTERM', 143, 'json'],
  ] as const)(
    '%s during a one-shot sync records the run aborted, empties the spool, exits %i, logs no error, and its %s summary counts nothing loaded',
    async (signal, code, format) => {
      // Batches of 500 are committed (their files in the spool), then the body stalls: the run is mid-read.
      const sim = await startTestSimulator({ generate: { n: 60_000 }, faults: ['ndjson:stall=20000000'] });
      const cli = spawnCli(format === 'json' ? ['sync', '--json'] : ['sync'], {
        REPORTS_BASE_URL: sim.url,
        REPORTS_WAREHOUSE: warehouse,
        REPORTS_BATCH_SIZE: '500',
        REPORTS_PROGRESS_INTERVAL_MS: '1',
        REPORTS_BODY_TIMEOUT_MS: '60000',
      });
      await cli.waitFor(/"records":[1-9]\d{3,}.*"msg":"sync progress"/, 50_000);
      cli.child.kill(signal);
      const exit = await cli.exited;
      expect(exit.code).toBe(code);
      const { stderr, stdout } = cli.output();
      // A stop that was asked for is no error: the aborted run is a warning, and nothing is logged at error.
      expect(stderr).toMatch(/"level":"warn"[^\n]*"msg":"run aborted"/);
      expect(stderr).not.toMatch(/"level":"error"/);
      // Its valid records were staged, never merged: not counted as loaded.
      if (format === 'text') {
        expect(stdout).toMatch(/ABORTED/);
        expect(stdout).toMatch(
          /records: [\d,]+ read, [\d,]+ valid \(staged, not merged: the run was aborted\)/,
        );
        expect(stdout).not.toMatch(/ loaded,/);
      } else {
        const [run] = (JSON.parse(stdout) as { runs: { status: string; counters: Record<string, number> }[] })
          .runs;
        expect(run!.status).toBe('aborted');
        expect(run!.counters.recordsLoaded).toBe(0);
        expect(run!.counters.recordsStaged).toBeGreaterThan(0);
      }
      const spool = `${warehouse}.spool`;
      expect(existsSync(spool) ? readdirSync(spool) : []).toEqual([]);
      const status = JSON.parse(
        (await runCli(['status', '--json'], { REPORTS_WAREHOUSE: warehouse })).stdout,
      ) as { runs: { status: string }[] };
      expect(status.runs[0]!.status).toBe('aborted');
    },
    90_000,
  );

  it('logs JSON lines off a terminal: ISO time, level label, errors with their code', async () => {
    const r = await runCli(['sync'], {
      REPORTS_BASE_URL: 'http://127.0.0.1:9',
      REPORTS_WAREHOUSE: warehouse,
      REPORTS_RETRIES: '0',
      REPORTS_LOG_LEVEL: 'info',
    });
    expect(r.code).toBe(1);
    const lines = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).toContain(line.level);
    }
    const failed = lines.find((l) => l.msg === 'run failed') as { err: { code: string; message: string } };
    expect(failed.err.code).toMatch(/^[A-Z_]+$/);
    expect(failed.err.message).toContain('127.0.0.1:9');
    expect(r.stderr).not.toContain('"type":"Object"');
  });
});
