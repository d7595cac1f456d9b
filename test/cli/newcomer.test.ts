import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/util/package-root.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { tempDir } from '../helpers/sync.js';

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

    const status = await runCli(['status', '--json'], { REPORTS_WAREHOUSE: warehouse });
    expect(status.code).toBe(0);
    const s = JSON.parse(status.stdout) as {
      runs: { status: string; read: number }[];
      totals: { current: number };
    };
    expect(s.runs[0]).toMatchObject({ status: 'succeeded', read: run!.counters.recordsRead });
    expect(s.totals.current).toBe(doc.warehouse.currentReports);
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
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)(
    '%s during a one-shot sync records the run aborted, empties the spool, exits %i',
    async (signal, code) => {
      // Batches of 500 are committed (their files in the spool), then the body stalls: the run is mid-read.
      const sim = await startTestSimulator({ generate: { n: 60_000 }, faults: ['ndjson:stall=20000000'] });
      const cli = spawnCli(['sync'], {
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
      const { stderr } = cli.output();
      expect(stderr).toMatch(/"msg":"run aborted"/);
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
