import { readdirSync, readlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateDataset } from '../../src/simulator/generate.js';
import { startSimulator } from '../../src/simulator/server.js';
import { openWarehouse } from '../../src/warehouse/database.js';
import { publishedPathFor } from '../../src/warehouse/open-migrated.js';
import { readManifest } from '../../src/warehouse/publish-parquet.js';
import { runCli } from '../helpers/cli.js';
import { spawnCli } from '../helpers/cli-process.js';
import { expectSameAsFullPublish } from '../helpers/published.js';
import { openTestWarehouse, query, tempDir, testConfig } from '../helpers/sync.js';

// SIGKILL of `reports-sync publish` at the failpoints of src/warehouse/publish.ts: what readers find in the
// published folder right after, and that the next publish converges to what a full publish writes.

/** What a reader of the published folder sees: the copy's watermark and runs, the Parquet set's. */
async function readPublished(dir: string) {
  const copy = await openWarehouse(join(dir, 'warehouse.duckdb'), { readOnly: true });
  try {
    const [row] = await query(
      copy,
      `SELECT publish_id, (SELECT count(*) FROM sync_runs) AS runs, (SELECT count(*) FROM reports) AS reports
       FROM publish_watermark`,
    );
    const version = join(dir, readlinkSync(join(dir, 'parquet')));
    const [parquet] = await query(
      copy,
      `SELECT count(*) AS reports FROM read_parquet('${join(version, 'reports', '*.parquet')}')`,
    );
    return {
      copy: row,
      parquet: { publishId: readManifest(version)?.watermark.publishId, reports: parquet?.reports },
    };
  } finally {
    copy.close();
  }
}

describe('SIGKILL of a publish', () => {
  it.each([
    ['publish-written', 'the temp copy and Parquet folder written, nothing renamed'],
    ['publish-renamed', 'the new copy renamed into place, the Parquet link not swapped'],
  ])(
    'at %s (%s): readers keep whole snapshots; the next publish converges',
    async (point) => {
      const tmp = tempDir('reports-sync-publish-kill-');
      const sim = await startSimulator({ dataset: generateDataset(300, 5) });
      onTestFinished(async () => {
        await sim.close();
        tmp.cleanup();
      });
      const path = join(tmp.dir, 'w.duckdb');
      const dir = dirname(publishedPathFor(path));
      const env = { REPORTS_BASE_URL: sim.url, REPORTS_WAREHOUSE: path, REPORTS_RETRY_BASE_MS: '10' };
      expect((await runCli(['sync'], env)).code).toBe(0);
      expect((await runCli(['publish'], env)).code).toBe(0);
      const first = await readPublished(dir);
      sim.advanceDays(1);
      expect((await runCli(['sync'], env)).code).toBe(0);

      const proc = spawnCli(['publish'], { ...env, REPORTS_FAILPOINT: point });
      await proc.waitFor(new RegExp(`failpoint ${point} reached`));
      proc.child.kill('SIGKILL');
      expect((await proc.exited).signal).toBe('SIGKILL');

      const killed = await readPublished(dir);
      expect(killed.parquet).toEqual(first.parquet);
      if (point === 'publish-written') expect(killed.copy).toEqual(first.copy);
      else {
        // The copy holds the new day (two runs), the Parquet set still the first publish: each one whole.
        expect(killed.copy?.publish_id).not.toEqual(first.copy?.publish_id);
        expect(killed.copy?.runs).toBe(2);
      }
      expect(readdirSync(dir).some((f) => f.startsWith('.'))).toBe(true); // the dead publish's temp files

      const next = await runCli(['publish', '--json'], env);
      expect(next.code, next.stderr).toBe(0);
      const result = JSON.parse(next.stdout) as { mode: string; parquet: { mode: string; reason?: string } };
      expect(result.mode).toBe('incremental');
      expect(result.parquet.mode).toBe(point === 'publish-written' ? 'incremental' : 'full');
      expect(readdirSync(dir).filter((f) => f.startsWith('.'))).toEqual([]);
      const warehouse = await openTestWarehouse(testConfig(sim.url, path));
      try {
        await expectSameAsFullPublish(warehouse, dir, join(tmp.dir, 'full'));
      } finally {
        warehouse.close();
      }
    },
    120_000,
  );
});
