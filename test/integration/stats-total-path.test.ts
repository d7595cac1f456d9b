import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// The seed names none of the /stats counters: where the total of published reports is, is a setting.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const line = (id: string) =>
  `${JSON.stringify({ id, status: 'SUBMITTED', destination: 'ROAD_CONTROL', createdAt: '2024-01-01T00:00:00Z' })}\n`;

describe('REPORTS_STATS_TOTAL_PATH', () => {
  it('a total nested in the /stats body (as text) confirms the export, and its deletes are inferred', async () => {
    let ids = Array.from({ length: 20 }, (_, i) => `n-${String(i).padStart(2, '0')}`);
    const server = await startRawServer((req, res) => {
      if ((req.url ?? '').includes('/stats')) {
        return void res.end(JSON.stringify({ data: { reports: { count: String(ids.length) } } }));
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(ids.map(line).join(''));
    });
    onTestFinished(() => server.close());
    const file = join(tmp.dir, 'w.duckdb');
    const nested = testConfig(server.url, file, { statsTotalPath: 'data.reports.count' });
    const warehouse = await openTestWarehouse(nested);
    onTestFinished(() => warehouse.close());
    await syncTargetOnce(warehouse, nested, 'ndjson');
    ids = ids.filter((id) => id !== 'n-05');

    // Without the setting: no total, deletes held back, the note says what to set.
    const plain = testConfig(server.url, file, { conditionalExports: false });
    const [held] = await syncTargetOnce(warehouse, plain, 'ndjson');
    expect(held?.counters.removed).toBe(0);
    const [note] = await query(warehouse, `SELECT tombstones_note FROM sync_runs WHERE run_id = $run`, {
      run: held!.runId,
    });
    expect(String(note?.tombstones_note)).toContain('REPORTS_STATS_TOTAL_PATH');

    const [run] = await syncTargetOnce(warehouse, { ...nested, conditionalExports: false }, 'ndjson');
    expect(run?.counters.removed).toBe(1);
    const [row] = await query(
      warehouse,
      `SELECT stats_total_upstream::INTEGER AS upstream FROM sync_runs WHERE run_id = $run`,
      { run: run!.runId },
    );
    expect(row?.upstream).toBe(19);
  });
});
