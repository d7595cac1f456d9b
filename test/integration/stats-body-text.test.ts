import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// A /stats body of any legal JSON is stored as it came, or refused as STATS_INVALID: it never fails an
// export run, and its numbers are never rewritten by a double on the way to stats_snapshots.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const line = (id: string) =>
  `${JSON.stringify({ id, status: 'SUBMITTED', destination: 'ROAD_CONTROL', createdAt: '2024-01-01T00:00:00Z' })}\n`;

async function upstream(stats: () => string) {
  const ids = ['s1', 's2', 's3'];
  const server = await startRawServer((req, res) => {
    if ((req.url ?? '').includes('/stats')) {
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(stats());
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(ids.map(line).join(''));
  });
  onTestFinished(() => server.close());
  return server;
}

async function upstreamBody(warehouse: Parameters<typeof query>[0], run: string) {
  const rows = await query(
    warehouse,
    `SELECT body::VARCHAR AS body FROM stats_snapshots WHERE run_id = $run AND source = 'upstream'`,
    { run },
  );
  return rows[0]?.body;
}

describe('the /stats body as stored', () => {
  it('keeps counters a double would change (past 2^53, 1e400, 1.0) as the upstream wrote them', async () => {
    const body =
      '{"total": 3, "big": 12345678901234567890, "huge": 1e400, "one": 1.0, "n": [9007199254740993]}';
    const server = await upstream(() => body);
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    for (const target of ['stats', 'ndjson'] as const) {
      const [run] = await syncTargetOnce(warehouse, config, target);
      expect(run?.status, run?.error?.message).toBe('succeeded');
      expect(await upstreamBody(warehouse, run!.runId)).toBe(
        '{"total":3,"big":12345678901234567890,"huge":1e400,"one":1.0,"n":[9007199254740993]}',
      );
    }
  });

  it('refuses a body holding a lone surrogate (no UTF-8 form) as STATS_INVALID; the export still loads', async () => {
    const server = await upstream(() => '{"total": 3, "byStatus": {"\\ud800": 1, "SUBMITTED": 2}}');
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [stats] = await syncTargetOnce(warehouse, config, 'stats');
    expect(stats?.status).toBe('failed');
    expect(stats?.error?.code).toBe('STATS_INVALID');
    expect(stats?.error?.message).toContain('byStatus');
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect(run?.counters.inserted).toBe(3);
    const [facts] = await query(
      warehouse,
      'SELECT tombstones_note, stats_total_upstream FROM sync_runs WHERE run_id = $run',
      { run: run!.runId },
    );
    expect(String(facts?.tombstones_note)).toContain('surrogate');
    expect(facts?.stats_total_upstream).toBeNull();
  });

  it('records the failure of a body whose repeated key sits under a lone-surrogate key (the run row is closed)', async () => {
    const server = await upstream(() => '{"total": 3, "\\udc00": {"a": 1, "a": 2}}');
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [stats] = await syncTargetOnce(warehouse, config, 'stats');
    expect(stats?.error?.code).toBe('STATS_INVALID');
    const rows = await query(warehouse, `SELECT status, error->>'$.code' AS code FROM sync_runs`);
    expect(rows).toEqual([{ status: 'failed', code: 'STATS_INVALID' }]);
  });

  it('any JSON body is stored or refused as STATS_INVALID, never failing the run otherwise (property)', async () => {
    let body = '{}';
    const server = await upstream(() => body);
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'));
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const key = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('', '.', '$', 'a.b', '"', '\ud800'));
    const leaf = fc.oneof(
      fc.double(),
      fc.integer(),
      fc.bigInt().map((n) => ({ raw: n.toString() })),
      fc.string({ unit: 'binary' }),
      fc.constant(null),
      fc.boolean(),
    );
    const tree = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('node'), { maxLength: 3 }), tie('obj')),
      obj: fc.dictionary(key, tie('node'), { maxKeys: 4 }),
    })).obj;
    const text = (v: unknown): string => {
      if (v !== null && typeof v === 'object' && 'raw' in v) return String((v as { raw: string }).raw);
      if (Array.isArray(v)) return `[${v.map(text).join(',')}]`;
      if (v !== null && typeof v === 'object') {
        return `{${Object.entries(v)
          .map(([k, c]) => `${JSON.stringify(k)}:${text(c)}`)
          .join(',')}}`;
      }
      return Number.isFinite(v) || typeof v !== 'number' ? JSON.stringify(v) : 'null';
    };
    await fc.assert(
      fc.asyncProperty(tree, async (value) => {
        body = text(value);
        const [run] = await syncTargetOnce(warehouse, config, 'stats');
        if (run?.status === 'failed') expect(run.error?.code, run.error?.message).toBe('STATS_INVALID');
        else expect(run?.status).toBe('succeeded');
      }),
      { numRuns: 40 },
    );
  });
});
