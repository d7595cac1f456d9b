import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlertCenter } from '../../src/alerts/alert-center.js';
import type { Config } from '../../src/config/config.js';
import { silentLogger } from '../../src/util/logger.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { openTestWarehouse, query, tempDir, testConfig } from '../helpers/sync.js';

type Outcome = 'succeeded' | 'failed' | 'aborted';

// The de-duplication rule over generated histories, on a real warehouse: each run is written to the run
// log as a sync would leave it, then the hook after runs is called, as the daemon and the CLI do.
describe('alerts: one per incident, one resolve, never a flood (property)', { timeout: 300_000 }, () => {
  let tmp: ReturnType<typeof tempDir>;
  let warehouse: Warehouse;
  let config: Config;
  let seq = 0;

  beforeAll(async () => {
    tmp = tempDir();
    config = testConfig('http://127.0.0.1:9', join(tmp.dir, 'warehouse.duckdb'), {
      alertGapSnapshots: 3,
      statsDiffWarn: 5,
    });
    warehouse = await openTestWarehouse(config);
  });
  afterAll(() => {
    warehouse.close();
    tmp.cleanup();
  });

  const reset = () => query(warehouse, 'DELETE FROM sync_runs; DELETE FROM alert_events;');
  /** A finished run of `job` in the run log; the `diff` of a stats comparison when given. */
  const addRun = async (job: string, status: Outcome, diff?: number): Promise<string> => {
    seq += 1;
    const runId = `run-${String(seq).padStart(6, '0')}`;
    const at = new Date(Date.UTC(2026, 0, 1) + seq * 60_000).toISOString();
    await query(
      warehouse,
      `INSERT INTO sync_runs (run_id, job, source, status, started_at, finished_at, error,
         stats_total_upstream, stats_total_warehouse, stats_total_diff)
       VALUES ($run, $job, 'ndjson', $status, $at::TIMESTAMPTZ, $at::TIMESTAMPTZ, $error::JSON, $up, 100, $diff)`,
      {
        run: runId,
        job,
        status,
        at,
        error:
          status === 'succeeded'
            ? null
            : JSON.stringify({ code: 'HTTP_STATUS', message: 'the upstream answered 503' }),
        up: diff === undefined ? null : 100 + diff,
        diff: diff ?? null,
      },
    );
    return runId;
  };

  it('a job whose runs fail opens one run.failed per streak of failures and resolves it at the next success', async () => {
    const outcome = fc.constantFrom<Outcome>('succeeded', 'failed', 'failed', 'aborted');
    await fc.assert(
      fc.asyncProperty(fc.array(outcome, { minLength: 1, maxLength: 14 }), async (history) => {
        await reset();
        const alerts = new AlertCenter({ warehouse, config, logger: silentLogger() });
        const ids: string[] = [];
        for (const status of history) {
          const runId = await addRun('job-a', status);
          ids.push(runId);
          await alerts.afterRuns([runId]);
          // Evaluating again changes nothing (a retry of the hook, a second process).
          expect(await alerts.afterRuns([runId])).toEqual([]);
        }
        await alerts.close(0);
        const events = await query(
          warehouse,
          `SELECT type, state, run_id FROM alert_events WHERE incident = 'run:job-a' ORDER BY raised_at, event_id`,
        );
        // The model: streaks of failures, aborted runs ignored.
        const expected: { type: string; state: string; run_id: string }[] = [];
        let open = false;
        history.forEach((status, i) => {
          if (status === 'failed' && !open) {
            expected.push({ type: 'run.failed', state: 'open', run_id: ids[i]! });
            open = true;
          } else if (status === 'succeeded' && open) {
            expected.push({ type: 'run.recovered', state: 'resolved', run_id: ids[i]! });
            open = false;
          }
        });
        expect(events).toEqual(expected);
        // Never two opens in a row, never a resolve without an open.
        events.forEach((e, i) => expect(e.state).toBe(i % 2 === 0 ? 'open' : 'resolved'));
      }),
      { numRuns: 40 },
    );
  });

  it('a gap opens only after N consecutive comparisons over the threshold and resolves at the first within it', async () => {
    const diff = fc.oneof(
      fc.integer({ min: -5, max: 5 }),
      fc.integer({ min: 6, max: 1000 }),
      fc.integer({ min: -1000, max: -6 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(diff, { minLength: 1, maxLength: 12 }), async (diffs) => {
        await reset();
        const alerts = new AlertCenter({ warehouse, config, logger: silentLogger() });
        for (const d of diffs) await alerts.afterRuns([await addRun('snapshot-stats', 'succeeded', d)]);
        await alerts.close(0);
        const events = await query(
          warehouse,
          `SELECT type FROM alert_events WHERE incident = 'reconciliation' ORDER BY raised_at, event_id`,
        );
        const expected: string[] = [];
        let open = false;
        let streak = 0;
        for (const d of diffs) {
          const over = Math.abs(d) > 5;
          streak = over ? streak + 1 : 0;
          if (!open && streak >= 3) {
            expected.push('reconciliation.gap');
            open = true;
          } else if (open && !over) {
            expected.push('reconciliation.resolved');
            open = false;
          }
        }
        expect(events.map((e) => e.type)).toEqual(expected);
      }),
      { numRuns: 40 },
    );
  });
});
