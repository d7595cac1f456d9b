import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { query, tempDir } from '../helpers/sync.js';
import { openWarehouse } from '../../src/warehouse/database.js';

describe('reports-sync sync --source', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(() => tmp.cleanup());

  it('all = NDJSON then CSV; stats = a snapshot run; no --source = NDJSON with its /stats snapshot', async () => {
    const sim = await startTestSimulator();
    const path = join(tmp.dir, 'w.duckdb');
    // The small fixture holds 4 warts in 14 lines: allow them.
    const env = { REPORTS_BASE_URL: sim.url, REPORTS_WAREHOUSE: path, REPORTS_MAX_REJECT_RATIO: '1' };

    const all = await runCli(['sync', '--source', 'all', '--page-size', '5', '--log-level', 'error'], env);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/\(ndjson\): SUCCEEDED[\s\S]*\(csv\): SUCCEEDED/);
    expect(all.stdout).toContain('/stats:  upstream total 10, warehouse 10 (difference 0)');
    expect(all.stdout).toContain('tombstones: complete export of 10 reports');

    const stats = await runCli(['sync', '--source', 'stats', '--log-level', 'error'], env);
    expect(stats.code, stats.stderr).toBe(0);
    expect(stats.stdout).toMatch(/\(stats\): SUCCEEDED/);

    // The NDJSON export is unchanged since the first run: a 304, in one request and without a snapshot.
    const plain = await runCli(['sync', '--log-level', 'error'], env);
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain('export not modified (304)');

    const bad = await runCli(['sync', '--source', 'csv', '--page-size', '0'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('expected an integer from 1 to 1000000');

    const w = await openWarehouse(path, { readOnly: true });
    try {
      const runs = await query(w, 'SELECT source, page_size FROM sync_runs ORDER BY started_at');
      expect(runs).toEqual([
        { source: 'ndjson', page_size: null },
        { source: 'csv', page_size: 5 },
        { source: 'stats', page_size: null },
        { source: 'ndjson', page_size: null },
      ]);
      const [snapshots] = await query(w, 'SELECT count(DISTINCT run_id) AS n FROM stats_snapshots');
      expect(snapshots?.n).toBe(3);
    } finally {
      w.close();
    }
  });
});
