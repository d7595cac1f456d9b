import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveJobs } from '../../src/daemon/load-jobs.js';
import { startDaemon, type Daemon } from '../../src/daemon/start-daemon.js';
import { silentLogger } from '../../src/util/logger.js';
import { waitFor } from '../helpers/daemon.js';
import { COMPARED, duckRows, pgQuery, pgRows } from '../helpers/pg-parity.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();
let tmp: ReturnType<typeof tempDir>;
let daemon: Daemon | undefined;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(async () => {
  await daemon?.stop('test over');
  daemon = undefined;
  tmp.cleanup();
});

describe('the daemon with REPORTS_POSTGRES_URL', { timeout: 180_000 }, () => {
  it('publishes to PostgreSQL after its catch-up job, and PostgreSQL then equals the warehouse', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({ generate: { n: 120, seed: 6 } });
    const config = testConfig(sim.url, `${tmp.dir}/warehouse.duckdb`, {
      port: 0,
      host: '127.0.0.1',
      postgresUrl: db.url,
      postgresSchema: db.schema,
    });
    const jobs = resolveJobs(
      [
        {
          file: 'nightly.ts',
          declaration: { name: 'nightly', target: 'ndjson', description: 'nightly', schedule: '0 0 1 1 *' },
        },
      ],
      {},
      ['ndjson'],
    );
    daemon = await startDaemon({ config, logger: silentLogger(), jobs });
    const state = await waitFor('the publish of the catch-up job', async () => {
      try {
        const rows = await pgQuery<{ last_run_id: string }>(
          db.url,
          db.schema,
          'SELECT last_run_id FROM publish_state',
        );
        return rows[0];
      } catch {
        return undefined; // the schema does not exist yet
      }
    });
    expect(state.last_run_id).toMatch(/nightly|ndjson/);
    for (const relation of Object.keys(COMPARED)) {
      expect(await pgRows(db.url, db.schema, relation), relation).toEqual(
        await duckRows(daemon.warehouse, relation),
      );
    }
  });
});
