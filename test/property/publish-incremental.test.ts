import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import type { SimulatorHandle } from '../../src/simulator/server.js';
import type { SyncTarget } from '../../src/sync/sync-targets.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { publishSnapshot } from '../../src/warehouse/publish.js';
import { expectSameAsFullPublish } from '../helpers/published.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const STATUSES = ['SUBMITTED', 'IN_PROGRESS', 'RESOLVED'];
const DESTINATIONS = ['ROAD_CONTROL', 'PARKS', 'NULL'];
const N = 7;

/** One report of an upstream state: whether it is published, and its values (each change makes a version). */
const reportState = fc.record({
  present: fc.boolean(),
  status: fc.nat(STATUSES.length - 1),
  destination: fc.nat(DESTINATIONS.length - 1),
  description: fc.nat(2),
  // Its creation moved to another year: its Parquet file changes.
  moved: fc.boolean(),
  // An unknown numeric field: a CSV run stores its text, the next NDJSON run refines it in place.
  priority: fc.option(fc.nat(3), { nil: undefined }),
  // Its line fails validation: quarantined, so a full export keeps it, marked unseen (not tombstoned).
  broken: fc.constantFrom(false, false, false, true),
});

/**
 * One step: an upstream state and the run that reads it (`again`: the previous upstream once more, a 304
 * for a full export; `failing`: an NDJSON run the upstream answers 500), quarantined lines in the export,
 * and whether a publish follows.
 */
const step = fc.record({
  run: fc.constantFrom<SyncTarget | 'again' | 'failing'>(
    'ndjson',
    'csv',
    'recent',
    'stats',
    'again',
    'default',
    'failing',
  ),
  reports: fc.array(reportState, { minLength: N, maxLength: N }),
  warts: fc.nat(2),
  publish: fc.boolean(),
});

type ReportState = typeof reportState extends fc.Arbitrary<infer T> ? T : never;

function line(i: number, r: ReportState): string {
  // Newer reports have larger indexes, so the list (newest first) shows them first, as `recent` expects.
  // Over six years (a file a year for so few reports); `moved` changes the year, so the row changes file.
  const created = new Date(Date.UTC(2019 + ((i * 2 + (r.moved ? 1 : 0)) % 6), i % 12, 1 + i, 10));
  return JSON.stringify({
    id: `r${i}`,
    status: r.broken ? 42 : STATUSES[r.status],
    destination: DESTINATIONS[r.destination],
    description: `report ${i}, variant ${r.description}`,
    createdAt: new Date(created.getTime() + i * 60_000).toISOString(),
    updatedAt: new Date(
      created.getTime() + (r.status * 3 + r.description) * 3_600_000 + i * 60_000,
    ).toISOString(),
    ...(r.priority === undefined ? {} : { priority: r.priority }),
  });
}

describe('incremental publishes', () => {
  it('after any sequence of runs, the copy and the Parquet set brought forward equal a full publish', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 6 }), async (steps) => {
        const base = join(tmp.dir, `s${round++}`);
        let warehouse: Warehouse | undefined;
        let sim: SimulatorHandle | undefined;
        let published = 0;
        const publish = async () => {
          const result = await publishSnapshot(warehouse!, `${base}-published`);
          // Only the first publish has no previous copy; every later one applies a change set.
          const how = [result.mode, result.reason, result.parquet.mode];
          expect(how).toEqual(
            published === 0
              ? ['full', 'no published copy yet', 'full']
              : ['incremental', undefined, 'incremental'],
          );
          await expectSameAsFullPublish(warehouse!, `${base}-published`, `${base}-full-${published++}`);
        };
        try {
          for (const [k, s] of steps.entries()) {
            if (s.run !== 'again' || !sim) {
              const file = `${base}-${k}.ndjson`;
              const lines = s.reports.flatMap((r, i) => (r.present ? [line(i, r)] : []));
              for (let w = 0; w < s.warts; w++) lines.splice(w * 2, 0, `{"id":"bad-${k}-${w}","status":`);
              writeFileSync(file, `${lines.join('\n')}\n`);
              await sim?.close();
              sim = await startTestSimulator({ dataset: await loadDataset(file) });
            }
            const config = testConfig(sim.url, `${base}.duckdb`, {
              csvPageSize: 2,
              tombstoneMinShare: 0,
              maxRejectRatio: 1,
              recentPageSize: 2,
              retries: 0,
            });
            warehouse ??= await openTestWarehouse(config);
            // A failing run leaves a failed run row (and a drift it saw) to publish.
            sim.setFaults(s.run === 'failing' ? ['ndjson:status=500'] : []);
            await syncTargetOnce(
              warehouse,
              config,
              s.run === 'again' || s.run === 'failing' ? 'ndjson' : s.run,
            );
            if (s.publish) await publish();
          }
          await publish();
        } finally {
          warehouse?.close();
          await sim?.close();
        }
      }),
      { numRuns: 12, endOnFailure: true }, // no shrinking: each try is several pipeline runs
    );
  }, 600_000);
});
