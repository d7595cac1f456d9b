import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { tempDir } from '../helpers/sync.js';

interface RunDoc {
  runs: { status: string; attempts: number; error?: { code: string; message: string; retryable: boolean } }[];
}

// Two base-URL mistakes a newcomer makes against a plain-HTTP upstream (the simulator).
describe('base-URL mistakes say what is wrong and are not retried', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(() => tmp.cleanup());
  const env = () => ({ REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb') });

  it('a base URL ending with the API prefix is refused before any request, naming the URL to use', async () => {
    const sim = await startTestSimulator();
    for (const given of [`${sim.url}/api/v1/public`, `${sim.url}/api/v1/public/`]) {
      const r = await runCli(['sync', '--base-url', given], env());
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('ends with /api/v1/public, which reports-sync adds to every request itself');
      expect(r.stderr).toContain(`give the service's root, ${sim.url}`);
    }
    const viaEnv = await runCli(['config'], { REPORTS_BASE_URL: `${sim.url}/api/v1/public` });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.stderr).toContain(`REPORTS_BASE_URL=${sim.url}/api/v1/public ends with /api/v1/public`);
    expect(sim.requests()).toEqual([]);
  });

  it('https:// against the plain-HTTP port fails at once (one attempt) saying the server does not speak TLS', async () => {
    const sim = await startTestSimulator();
    const tls = sim.url.replace('http://', 'https://');
    const started = Date.now();
    // Default retries (5, from 500 ms): a retried failure would take seconds and count attempts.
    const r = await runCli(['sync', '--base-url', tls, '--source', 'ndjson', '--json'], env());
    expect(r.code).toBe(1);
    const [run] = (JSON.parse(r.stdout) as RunDoc).runs;
    expect(run).toMatchObject({ status: 'failed', attempts: 1 });
    expect(run!.error).toMatchObject({ code: 'HTTP_NETWORK', retryable: false });
    expect(run!.error!.message).toContain('does not speak TLS');
    expect(run!.error!.message).toContain(`Use http:// in REPORTS_BASE_URL (${sim.url})`);
    expect(r.stderr).not.toMatch(/retrying/);
    expect(Date.now() - started).toBeLessThan(20_000); // not 6 attempts over ~22 s
    expect(sim.requests()).toEqual([]); // the handshake never became a request
  });

  it('a 404 whose path repeats a prefix of the API hints at the base URL', async () => {
    const sim = await startTestSimulator();
    const r = await runCli(
      ['sync', '--base-url', `${sim.url}/api/v1`, '--source', 'ndjson', '--json'],
      env(),
    );
    expect(r.code).toBe(1);
    const [run] = (JSON.parse(r.stdout) as RunDoc).runs;
    expect(run).toMatchObject({ status: 'failed', attempts: 1 });
    expect(run!.error!.message).toMatch(
      /^HTTP 404 from \S+\/api\/v1\/api\/v1\/public\/reports\.ndjson \(the path repeats \/api\/v1: REPORTS_BASE_URL \(--base-url\) should be the service's root/,
    );
    expect(sim.requests().map((q) => q.path)).toEqual(['/api/v1/api/v1/public/reports.ndjson']);
  });

  it.each([
    ['csv', 'REPORTS_CSV_PATH'],
    ['recent', 'REPORTS_LIST_PATH'],
    ['stats', 'REPORTS_STATS_PATH'],
  ])('a 404 to the first request of --source %s names %s', async (source, setting) => {
    const { startRawServer } = await import('../helpers/raw-server.js');
    const server = await startRawServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"message":"Not Found"}');
    });
    try {
      const r = await runCli(['sync', '--base-url', server.url, '--source', source, '--json'], env());
      expect(r.code).toBe(1);
      const [run] = (JSON.parse(r.stdout) as RunDoc).runs;
      expect(run!.error!.message).toContain(
        `nothing at this path: if the service has it elsewhere, set ${setting}`,
      );
    } finally {
      await server.close();
    }
  });
});
