import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ServerResponse } from 'node:http';
import { toWire } from '../../src/schema/report.js';
import { generateDataset } from '../../src/simulator/generate.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { startRawServer } from '../helpers/raw-server.js';
import { expectRunAccounted, waitUntil } from '../helpers/reliability.js';
import { query, tempDir } from '../helpers/sync.js';

// Issue 6, case 4 (one-shot commands): while one process syncs, a second `reports-sync sync` on the same
// warehouse exits 2 with a message naming the holder, touches nothing, and the first run completes.

describe('lock contention (case 4)', () => {
  it('a second sync while one runs exits 2 naming the holder; the first finishes undisturbed', async () => {
    const tmp = tempDir('reports-sync-lock-');
    const body = [...generateDataset(100, 2).snapshot().published()]
      .map((r) => `${JSON.stringify(toWire(r))}\n`)
      .join('');
    // The upstream holds the first sync's request until the test releases it, so that sync holds the
    // warehouse for as long as the test needs, without any timing assumption.
    const held: ServerResponse[] = [];
    const upstream = await startRawServer((_req, res) => held.push(res));
    const release = () => {
      for (const res of held.splice(0)) {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        res.end(body);
      }
    };
    onTestFinished(async () => {
      release();
      await upstream.close();
      tmp.cleanup();
    });
    const env = { REPORTS_BASE_URL: upstream.url, REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb') };
    const first = spawnCli(['sync'], env);
    await first.waitFor(/"msg":"run started"/);
    await waitUntil(() => held.length === 1);

    const second = await runCli(['sync'], env);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`is in use by`);
    expect(second.stderr).toContain(`PID ${first.child.pid}`);
    expect(second.stderr).not.toMatch(/unexpected error|IO Error/);

    expect(upstream.requests).toHaveLength(1); // the second never fetched
    release();
    expect((await first.exited).code).toBe(0);
    const w = await openWarehouse(env.REPORTS_WAREHOUSE, { readOnly: true });
    try {
      const runs = await query(w, `SELECT run_id, status FROM sync_runs`);
      expect(runs.map((r) => r.status)).toEqual(['succeeded']);
      expect(await query(w, 'SELECT count(*) AS n FROM reports')).toEqual([{ n: 100 }]);
      await expectRunAccounted(w, String(runs[0]?.run_id));
    } finally {
      w.close();
    }
  });
});
