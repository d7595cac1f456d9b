import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const KNOWN = '"status":"SUBMITTED","destination":"ROAD_CONTROL","createdAt":"2024-01-01T00:00:00Z"';

describe('a /stats body of many counters', () => {
  it('adds at most REPORTS_STATS_MAX_VALUES rows to stats_values a run, keeps the body whole and reads the total past the cut', async () => {
    // 40 counters, then the total: past the cut of 10, so it can only be read from the body.
    const counters = Array.from({ length: 40 }, (_, i) => `"c${i}":${i}`).join(',');
    const stats = `{"byWard":{${counters}},"total":2}`;
    const ndjson = `{"id":"a",${KNOWN}}\n{"id":"b",${KNOWN}}\n`;
    const up = await startRawServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path.endsWith('/stats'))
        return res.writeHead(200, { 'content-type': 'application/json' }).end(stats);
      return res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(ndjson);
    });
    const config = testConfig(up.url, join(tmp.dir, 'w.duckdb'), { statsMaxValues: 10 });
    const logged: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) });
    const warehouse = await openTestWarehouse(config);
    try {
      const runs = [
        ...(await syncTargetOnce(warehouse, config, 'ndjson', logger)),
        ...(await syncTargetOnce(warehouse, config, 'stats', logger)),
      ];
      expect(runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
      for (const run of runs) {
        const [values] = await query(
          warehouse,
          `SELECT count(*) AS n, min(metric) AS first FROM stats_values WHERE run_id = $run AND source = 'upstream'`,
          { run: run.runId },
        );
        expect(values).toEqual({ n: 10, first: 'byWard.c0' });
        const [facts] = await query(
          warehouse,
          `SELECT s.stats_total_upstream AS total, json_array_length(json_keys(b.body->'byWard')) AS kept
             FROM sync_runs s JOIN stats_snapshots b USING (run_id)
            WHERE run_id = $run AND b.source = 'upstream'`,
          { run: run.runId },
        );
        expect(facts).toEqual({ total: 2, kept: 40 });
      }
      // The warehouse's own counters are not cut.
      const [own] = await query(
        warehouse,
        `SELECT count(*) AS n FROM stats_values WHERE run_id = $run AND source = 'warehouse' AND metric = 'total'`,
        { run: runs[0]!.runId },
      );
      expect(own).toEqual({ n: 1 });
      const warnings = logged.filter((l) => l.includes('REPORTS_STATS_MAX_VALUES'));
      expect(warnings).toHaveLength(2);
      expect(warnings[0]).toContain('31 more numeric values');
    } finally {
      warehouse.close();
      await up.close();
    }
  });
});
