import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateDataset } from '../../src/simulator/generate.js';
import { startSimulator } from '../../src/simulator/server.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { spawnCli } from '../helpers/cli-process.js';
import { expectRunAccounted } from '../helpers/reliability.js';
import { query, tempDir } from '../helpers/sync.js';

// Issue 6, case 5: a multi-MB line is capped and quarantined in bounded memory, not an out-of-memory
// crash. The built CLI runs in a child process that reports its own peak RSS (getrusage maxRSS) at exit;
// the same sync without the giant line is the baseline. A reader that buffered the line would hold it at
// least once as bytes (384 MiB here), so "peak grew by less than a quarter of the line" separates the two.
// A bounded reader still grows by the socket chunks that died since the last GC: V8 collects them only
// after tens of MiB of external memory (measured 20-53 MiB, whatever the line's size), so the line must
// be large enough for its quarter to clear that lag with a wide margin.

const GIANT = 384 * 1024 * 1024;
const REPORT_PEAK_RSS =
  'data:text/javascript,process.on("exit",()=>process.stderr.write("peak-rss-kib "+process.resourceUsage().maxRSS+"\\n"))';

async function syncPeakKiB(baseUrl: string, warehouse: string) {
  const proc = spawnCli(
    ['sync'],
    {
      REPORTS_BASE_URL: baseUrl,
      REPORTS_WAREHOUSE: warehouse,
      REPORTS_MAX_RECORD_BYTES: String(1024 * 1024),
      REPORTS_REJECT_RAW_MAX_BYTES: '65536',
    },
    ['--import', REPORT_PEAK_RSS],
  );
  const { code } = await proc.exited;
  const { stderr } = proc.output();
  expect(code, stderr).toBe(0);
  const peak = /peak-rss-kib (\d+)/.exec(stderr)?.[1];
  expect(peak, stderr).toBeDefined();
  return Number(peak);
}

describe('a multi-MB line (case 5)', () => {
  it('is quarantined with bounded memory: peak RSS grows by far less than the line', async () => {
    const tmp = tempDir('reports-sync-memory-');
    const plain = await startSimulator({ dataset: generateDataset(200, 8) });
    const giant = await startSimulator({
      dataset: generateDataset(200, 8),
      faults: [`ndjson:giant=${GIANT},at=5`],
    });
    onTestFinished(async () => {
      await plain.close();
      await giant.close();
      tmp.cleanup();
    });

    const baseline = await syncPeakKiB(plain.url, join(tmp.dir, 'plain.duckdb'));
    const path = join(tmp.dir, 'giant.duckdb');
    const peak = await syncPeakKiB(giant.url, path);
    expect(peak - baseline).toBeLessThan(GIANT / 1024 / 4);

    const w = await openWarehouse(path, { readOnly: true });
    try {
      const [run] = await query(w, 'SELECT run_id, records_read, records_rejected FROM sync_runs');
      expect(run).toMatchObject({ records_read: 200, records_rejected: 1 });
      await expectRunAccounted(w, String(run?.run_id));
      const [reject] = await query(
        w,
        'SELECT line, raw_truncated, raw_bytes, strlen(raw) AS kept FROM rejected_records',
      );
      expect(reject).toMatchObject({ line: 6, raw_truncated: true, kept: 65536 });
      expect(Number(reject?.raw_bytes)).toBeGreaterThan(GIANT);
      const [{ n } = {}] = await query(w, 'SELECT count(*) AS n FROM reports');
      expect(n).toBe(199);
    } finally {
      w.close();
    }
  });
});
