import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { ServerResponse } from 'node:http';
import { generateDataset } from '../../src/simulator/generate.js';
import { startSimulator } from '../../src/simulator/server.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { startRawServer } from '../helpers/raw-server.js';
import { expectRunAccounted, waitUntil } from '../helpers/reliability.js';
import { query, tempDir } from '../helpers/sync.js';

// Issue 6, case 4 (one-shot commands): while one process syncs, a second `reports-sync sync` on the same
// warehouse exits 2 with a message naming the holder, touches nothing, and the first run completes.

const EXPORT_PATH = '/api/v1/public/reports.ndjson';

/** Answers `res` with what the simulator answers for `url` (status, content type, body). */
async function passThrough(url: string, res: ServerResponse): Promise<void> {
  const answer = await fetch(url);
  res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
  res.end(Buffer.from(await answer.arrayBuffer()));
}

describe('lock contention (case 4)', () => {
  it('a second sync while one runs exits 2 naming the holder; the first finishes undisturbed', async () => {
    const tmp = tempDir('reports-sync-lock-');
    const sim = await startSimulator({ dataset: generateDataset(100, 2) });
    // In front of the simulator: the first export request is held until the test releases it, so the first
    // sync holds the warehouse for as long as the test needs, without any timing assumption. Everything
    // else (and the held request, once released) is passed through to the simulator.
    let held: (() => void) | undefined;
    let releaseHeld = () => undefined as void;
    const heldUntil = new Promise<void>((resolve) => (releaseHeld = resolve));
    const upstream = await startRawServer((req, res) => {
      const pass = () => void passThrough(`${sim.url}${req.url ?? '/'}`, res);
      if (req.url === EXPORT_PATH && held === undefined) {
        held = pass;
        void heldUntil.then(pass);
      } else pass();
    });
    onTestFinished(async () => {
      releaseHeld();
      await upstream.close();
      await sim.close();
      tmp.cleanup();
    });
    const env = { REPORTS_BASE_URL: upstream.url, REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb') };
    const first = spawnCli(['sync'], env);
    await first.waitFor(/"msg":"run started"/);
    await waitUntil(() => held !== undefined);

    const second = await runCli(['sync'], env);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`is in use by`);
    expect(second.stderr).toContain(`PID ${first.child.pid}`);
    expect(second.stderr).not.toMatch(/unexpected error|IO Error/);

    expect(upstream.requests.map((r) => r.url)).toEqual([EXPORT_PATH]); // the second never fetched
    releaseHeld();
    expect((await first.exited).code).toBe(0);
    const w = await openWarehouse(env.REPORTS_WAREHOUSE, { readOnly: true });
    try {
      const runs = await query(w, `SELECT run_id, status FROM sync_runs WHERE source = 'ndjson'`);
      expect(runs.map((r) => r.status)).toEqual(['succeeded']);
      expect(await query(w, 'SELECT count(*) AS n FROM reports')).toEqual([{ n: 100 }]);
      await expectRunAccounted(w, String(runs[0]?.run_id));
    } finally {
      w.close();
    }
  });
});
