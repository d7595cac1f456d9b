import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { postgresLag } from '../../src/alerts/postgres-lag.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

// PostgreSQL configured on a warehouse that has synced for a while: until its first publish, its lag counts
// from when it became a target (the daemon's start), not from changes made before, so the daemon's first
// check does not raise `publish.lagging` for a publish it is about to make.
describe('the PostgreSQL publish lag before the first publish', () => {
  it('counts from the daemon’s start, not from changes committed before PostgreSQL was a target', async () => {
    const sim = await startTestSimulator({ generate: { n: 50, seed: 2 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
    const connect = () => warehouse.connect();
    const hourLater = Date.now() + 3_600_000; // the changes are an hour old by then
    const before = (await postgresLag(warehouse.path, connect).lag(hourLater))!;
    expect(before.lagMs).toBeGreaterThanOrEqual(3_600_000);
    const started = hourLater - 5_000; // the daemon started 5 s before the check
    const fresh = await postgresLag(warehouse.path, connect, { neverPublishedSinceMs: started }).lag(
      hourLater,
    );
    expect(fresh?.lagMs).toBe(5_000);
    expect(fresh?.runsBehind).toBe(before.runsBehind); // still behind: only the clock starts later
  });
});
