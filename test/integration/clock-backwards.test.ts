import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { syncTarget } from '../../src/sync/sync-sources.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { capturingLogger, openTestWarehouse, query, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

describe('merge time with a clock that goes backwards', () => {
  it('never writes a version that ends before it starts, and warns about the clock', async () => {
    const sim = await startTestSimulator({ generate: { n: 300, seed: 7 } });
    const config = testConfig(sim.url, join(tmp.dir, 'w.duckdb'), { csvPageSize: 100 });
    const warehouse = await openTestWarehouse(config);
    const dispatcher = createHttpAgent(config);
    const { logger, lines } = await capturingLogger();
    const noon = Date.parse('2030-06-01T12:00:00.000Z');
    const run = (target: 'ndjson' | 'csv', at: number) =>
      syncTarget({ warehouse, config, dispatcher, logger, target, clock: () => new Date(at) });
    try {
      const [first] = await run('ndjson', noon);
      expect(first?.status).toBe('succeeded');
      expect(lines.filter((l) => String(l.msg).includes('clock is behind'))).toEqual([]);
      sim.advanceDays(2); // status moves (updates) and unpublished reports (tombstones)
      const [second] = await run('csv', noon - 3_600_000); // the clock one hour behind
      expect(second?.status).toBe('succeeded');
      expect((second?.counters.updated ?? 0) + (second?.counters.removed ?? 0)).toBeGreaterThan(0);
      sim.advanceDays(1);
      const [third] = await run('ndjson', noon - 7_200_000); // and further behind
      expect(third?.status).toBe('succeeded');

      const backwards = await query(
        warehouse,
        `SELECT count(*) AS n FROM report_versions WHERE valid_to IS NOT NULL AND valid_to <= valid_from`,
      );
      expect(backwards).toEqual([{ n: 0 }]);
      // Each report's versions follow one another: a version ends where the next begins.
      const gaps = await query(
        warehouse,
        `SELECT count(*) AS n FROM (
           SELECT valid_to, lead(valid_from) OVER (PARTITION BY id ORDER BY valid_from) AS next
           FROM report_versions) WHERE next IS NOT NULL AND valid_to IS DISTINCT FROM next`,
      );
      expect(gaps).toEqual([{ n: 0 }]);
      const warned = lines.filter((l) => String(l.msg).includes('clock is behind'));
      expect(warned).toHaveLength(2);
      expect(warned[0]).toMatchObject({ clock: new Date(noon - 3_600_000).toISOString() });
    } finally {
      await dispatcher.close();
      await warehouse.close();
    }
  });
});
