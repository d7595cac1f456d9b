import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { spawnCli, type CliProcess } from '../helpers/cli-process.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
let serving: CliProcess | undefined;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(async () => {
  if (serving && serving.child.exitCode === null) {
    serving.child.kill('SIGKILL');
    await serving.exited;
  }
  tmp.cleanup();
});

async function serve(db: { url: string; schema: string }): Promise<string> {
  // No warehouse file anywhere: the reader needs none.
  serving = spawnCli(
    ['serve', '--postgres', db.url, '--port', '0', '--warehouse', `${tmp.dir}/none.duckdb`],
    {
      REPORTS_POSTGRES_SCHEMA: db.schema,
    },
  );
  await serving.waitFor(/listening on http:\/\/\S+/);
  return /listening on (http:\/\/\S+)/.exec(serving.output().stdout)![1]!;
}

describe('reports-sync serve --postgres', () => {
  it('serves the public API, /healthz, /metrics and the status page from a published schema, with no warehouse file', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({ generate: { n: 150, seed: 23 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    let runId: string | null;
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      runId = (await publishToPostgres(warehouse, db)).lastRunId;
    } finally {
      warehouse.close();
    }
    const base = await serve(db);
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', published: { lastRunId: runId } });
    const list = await fetch(`${base}/api/v1/public/reports?pageSize=3`);
    expect(list.status).toBe(200);
    expect(list.headers.get('etag')).toBe(`"${runId}"`);
    expect((await list.json()) as unknown[]).toHaveLength(3);
    const page = await fetch(`${base}/`);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await page.text();
    expect(html).toContain(runId!);
    // Every run the status page links has its page, as on the DuckDB reader; an unknown one is a 404 page.
    const links = [...html.matchAll(/href="(\/runs\/[^"]+)"/g)].map((m) => m[1]!);
    expect(links).toContain(`/runs/${encodeURIComponent(runId!)}`);
    for (const link of new Set(links)) {
      const run = await fetch(`${base}${link}`);
      expect(run.status, link).toBe(200);
      expect(run.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await run.text()).toMatch(/succeeded[\s\S]*150/);
    }
    const unknown = await fetch(`${base}/runs/no-such-run`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('no-such-run');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^reports_sync_postgres_served_publish_timestamp_seconds \d+/m);
    expect(metrics).toContain(
      'reports_sync_http_request_duration_seconds_count{method="GET",route="/api/v1/public/reports"',
    );
    serving!.child.kill('SIGTERM');
    expect((await serving!.exited).code).toBe(0);
  });

  it('answers 503 with Retry-After, and /healthz 503, while the schema holds no publish', async (ctx) => {
    const db = await postgres.database(ctx);
    const base = await serve(db);
    const list = await fetch(`${base}/api/v1/public/reports`);
    expect(list.status).toBe(503);
    expect(list.headers.get('retry-after')).toBe('1');
    const body = (await list.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('UNAVAILABLE');
    expect(body.error.message).toMatch(/publish-postgres/);
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { error: { code: string } }).error.code).toBe(
      'READER_POSTGRES_UNAVAILABLE',
    );
  });
});
