import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const STATUSES = ['SUBMITTED', 'IN_PROGRESS', 'RESOLVED'] as const;

/** One upstream state: which of the reports it publishes, each one's status, and the export read. */
const step = (n: number) =>
  fc.record({
    present: fc.array(fc.boolean(), { minLength: n, maxLength: n }).filter((p) => p.some(Boolean)),
    status: fc.array(fc.integer({ min: 0, max: STATUSES.length - 1 }), { minLength: n, maxLength: n }),
    source: fc.constantFrom('ndjson' as const, 'csv' as const),
  });
const scenario = fc
  .integer({ min: 1, max: 6 })
  .chain((n) => fc.tuple(fc.constant(n), fc.array(step(n), { minLength: 1, maxLength: 5 })));

/** The line of report `i` with status index `s` (its `updatedAt` moves with the status). */
function line(i: number, s: number): string {
  return JSON.stringify({
    id: `r${i}`,
    status: STATUSES[s],
    destination: 'ROAD_CONTROL',
    createdAt: '2024-03-01T10:00:00.000Z',
    updatedAt: `2024-03-0${2 + s}T10:00:00.000Z`,
  });
}

describe('SCD2 history over changing upstreams', () => {
  it('records one version per insert, change, removal and return, contiguous, the last one the report row', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async ([n, steps]) => {
        const dir = join(tmp.dir, `s${round++}`);
        const path = `${dir}.duckdb`;
        // What the history must hold: per report, the changes in order, and its state now.
        const expected = new Map<string, string[]>();
        const state = new Map<string, { status: number; removed: boolean }>();
        let warehouse: Awaited<ReturnType<typeof openTestWarehouse>> | undefined;
        try {
          for (const [k, s] of steps.entries()) {
            const file = `${dir}-${k}.ndjson`;
            const lines = s.present.flatMap((p, i) => (p ? [line(i, s.status[i]!)] : []));
            writeFileSync(file, `${lines.join('\n')}\n`);
            const sim = await startTestSimulator({ dataset: await loadDataset(file) });
            const config = testConfig(sim.url, path, { csvPageSize: 2, tombstoneMinShare: 0 });
            warehouse ??= await openTestWarehouse(config);
            try {
              const [run] = await syncTargetOnce(warehouse, config, s.source);
              expect(run?.status, run?.error?.message).toBe('succeeded');
              // A run's versions are in place when it is finished (what the status page's chart joins on).
              const [late] = await query(
                warehouse,
                `SELECT count(*) AS n FROM report_versions v JOIN sync_runs r USING (run_id)
                 WHERE v.valid_from > r.finished_at`,
              );
              expect(late?.n).toBe(0);
            } finally {
              await sim.close();
            }
            for (let i = 0; i < n; i++) {
              const id = `r${i}`;
              const before = state.get(id);
              const changes = expected.get(id) ?? [];
              if (s.present[i]) {
                const status = s.status[i]!;
                if (!before) changes.push('insert');
                else if (before.removed) changes.push('revive');
                else if (before.status !== status) changes.push('update');
                state.set(id, { status, removed: false });
              } else if (before && !before.removed) {
                changes.push('remove');
                before.removed = true;
              }
              if (changes.length > 0) expected.set(id, changes);
            }
          }
          const versions = await query(
            warehouse!,
            `SELECT id, change, status, valid_from, valid_to FROM report_versions ORDER BY id, valid_from`,
          );
          const reports = await query(warehouse!, 'SELECT id, status, removed_at FROM reports ORDER BY id');
          const byId = new Map<string, typeof versions>();
          for (const v of versions) byId.set(String(v.id), [...(byId.get(String(v.id)) ?? []), v]);
          expect(new Map([...byId].map(([id, vs]) => [id, vs.map((v) => v.change)]))).toEqual(expected);
          for (const [id, vs] of byId) {
            // Each version ends where the next begins; only the last is open.
            for (let j = 0; j < vs.length - 1; j++) {
              expect(vs[j]!.valid_to).toEqual(vs[j + 1]!.valid_from);
              expect(Number(vs[j]!.valid_to)).toBeGreaterThan(Number(vs[j]!.valid_from));
            }
            const last = vs.at(-1)!;
            expect(last.valid_to).toBeNull();
            const row = reports.find((r) => r.id === id);
            expect(last.status).toBe(row?.status);
            expect(last.status).toBe(STATUSES[state.get(id)!.status]);
            expect(row?.removed_at !== null).toBe(last.change === 'remove');
          }
        } finally {
          warehouse?.close();
        }
      }),
      { numRuns: 12, endOnFailure: true }, // no shrinking: each try is several pipeline runs
    );
  }, 300_000);
});
