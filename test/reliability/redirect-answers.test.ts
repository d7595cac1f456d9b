import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer, type RawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// Answers a hostile but legal upstream may give on the way to an export (redirects, a 304 never asked
// for): each fails once, with an error that says what happened and who is at fault.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

async function failedRun(handler: (url: URL, server: () => RawServer) => [number, Record<string, string>]) {
  const self: { server?: RawServer } = {};
  const server = await startRawServer((req, res) => {
    const [status, headers] = handler(new URL(req.url ?? '/', 'http://x'), () => self.server!);
    res.writeHead(status, headers);
    res.end();
  });
  self.server = server;
  onTestFinished(() => server.close());
  const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { retries: 3, retryBaseMs: 10 });
  const warehouse = await openTestWarehouse(config);
  onTestFinished(() => warehouse.close());
  const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
  expect(run?.status).toBe('failed');
  return { error: run?.error, requests: server.requests.map((r) => r.url) };
}

describe('answers on the way to the export', () => {
  it.each(['file:///etc/passwd', 'ftp://127.0.0.1/reports.ndjson', 'data:text/plain,{}'])(
    'a redirect to %s fails at once with REDIRECT_INVALID, not retried',
    async (location) => {
      const { error, requests } = await failedRun(() => [302, { location }]);
      expect(error?.code).toBe('REDIRECT_INVALID');
      expect(error?.message).toMatch(/only http: and https: redirects are followed/);
      expect(requests).toHaveLength(1);
    },
  );

  it('a redirect to https:// on a plain-HTTP port blames the redirect, not REPORTS_BASE_URL', async () => {
    const { error, requests } = await failedRun((url, server) =>
      url.pathname.startsWith('/files')
        ? [200, {}]
        : [302, { location: `${server().url.replace('http:', 'https:')}/files/r.ndjson` }],
    );
    expect(error?.code).toBe('HTTP_NETWORK');
    expect(error?.message).toMatch(/the upstream's redirect sends https:\/\/ to a plain-HTTP port/);
    expect(error?.message).toMatch(
      /reached by 1 redirect from http:\/\/127\.0\.0\.1:\d+\/api\/v1\/public\/reports\.ndjson/,
    );
    expect(error?.message).not.toMatch(/REPORTS_BASE_URL/);
    expect(requests).toHaveLength(1);
  });

  it('too many redirects name REPORTS_MAX_REDIRECTS', async () => {
    const { error } = await failedRun((url) => [
      302,
      { location: `${url.pathname}?hop=${url.search.length}` },
    ]);
    expect(error?.code).toBe('REDIRECT_LIMIT');
    expect(error?.message).toMatch(/REPORTS_MAX_REDIRECTS/);
  });

  it('a 304 to a request that sent no validators says none were sent', async () => {
    const { error } = await failedRun(() => [304, {}]);
    expect(error?.code).toBe('HTTP_STATUS');
    expect(error?.message).toMatch(/HTTP 304 .*sent no If-None-Match or If-Modified-Since/);
  });
});
