import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isRestyledName } from '../../src/schema/field-names.js';
import { isModelledKey } from '../../src/schema/wire-format.js';
import { readRunState } from '../../src/reader/last-success.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

// Unknown fields of every JSON type, numbers a double cannot hold among them (as raw text in the line).
const rawNumber = fc.constantFrom('12345678901234567890', '1e400', '1.0', '-0', '1E+2', '0.1');
const extraValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
  rawNumber,
  fc.constantFrom('null', 'true', 'false', '""', '"5"', '"  padded "', '"a,b\\n\\"c\\""'),
);
const extraKey = fc
  .string({ minLength: 1, maxLength: 8 })
  .filter((k) => !isModelledKey(k) && !isRestyledName(k) && k.trim() !== '' && !/[\r\n]/.test(k));
const report = (i: number) =>
  fc
    .record({
      extras: fc.uniqueArray(fc.tuple(extraKey, extraValue), { maxLength: 4, selector: ([k]) => k }),
      // Known fields in their wire variants: a numeric id, numeric text, an offset for the same instant.
      numericId: fc.boolean(),
      latText: fc.boolean(),
      offset: fc.constantFrom('Z', '+02:00', '-05:30'),
      located: fc.boolean(),
    })
    .map(({ extras, numericId, latText, offset, located }) => {
      const created =
        offset === 'Z'
          ? '2024-03-01T10:00:00Z'
          : offset === '+02:00'
            ? '2024-03-01T12:00:00+02:00'
            : '2024-03-01T04:30:00-05:30';
      const lat = latText ? '"47.5"' : '47.5';
      const known =
        `"id":${numericId ? 1000 + i : `"r${i}"`},"status":"IN PROGRESS","destination":"ROAD_CONTROL",` +
        `${located ? `"location":{"lat":${lat},"lng":8.25},` : ''}"createdAt":"${created}"`;
      return `{${known}${extras.map(([k, v]) => `,${JSON.stringify(k)}:${v}`).join('')}}`;
    });
const dataset = fc
  .integer({ min: 1, max: 8 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => report(i))));

// What the reader serves of each report (its columns as the public API shows them).
const SERVED = `SELECT id, status, destination, category, description, lat, lng, address, created_at, updated_at,
  extra::VARCHAR AS extra FROM reports WHERE removed_at IS NULL ORDER BY id`;

describe('history across sources', () => {
  it('any sequence of NDJSON and CSV syncs over an unchanged upstream makes no version after the first', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        dataset,
        fc.array(fc.constantFrom('ndjson' as const, 'csv' as const, 'all' as const), {
          minLength: 2,
          maxLength: 4,
        }),
        async (lines, targets) => {
          const file = join(tmp.dir, `d${round++}.ndjson`);
          writeFileSync(file, `${lines.join('\n')}\n`);
          const sim = await startTestSimulator({ dataset: await loadDataset(file) });
          const config = testConfig(sim.url, `${file}.duckdb`, { csvPageSize: 3 });
          const warehouse = await openTestWarehouse(config);
          try {
            let served = '';
            for (const target of targets) {
              const runs = await syncTargetOnce(warehouse, config, target);
              for (const run of runs) expect(run.status, run.error?.message).toBe('succeeded');
              expect(runs.every((r) => r.counters.recordsRejected === 0)).toBe(true);
              // A run that changed what the reader serves is the one its validators (ETag) key on.
              const now = JSON.stringify(await query(warehouse, SERVED));
              if (now !== served) {
                const c = await warehouse.connect();
                const keyed = (await readRunState(c).finally(() => c.closeSync())).changed?.runId;
                expect(runs.map((r) => r.runId)).toContain(keyed); // 'all' is an NDJSON and a CSV run
              }
              served = now;
            }
            const versions = await query(
              warehouse,
              `SELECT count(*) AS versions, count(DISTINCT id) AS reports,
                 count(*) FILTER (WHERE change <> 'insert') AS later FROM report_versions`,
            );
            expect(versions).toEqual([{ versions: lines.length, reports: lines.length, later: 0 }]);
            // After an NDJSON run the warehouse holds the typed extras exactly as the NDJSON export has them.
            if (targets.some((t) => t !== 'csv')) {
              const ndjson = await (await fetch(sim.api('/reports.ndjson'))).text();
              const stored = await query(
                warehouse,
                `SELECT id, extra::VARCHAR AS extra FROM reports ORDER BY id`,
              );
              for (const row of stored) {
                const line = ndjson.split('\n').find((l) => l.startsWith(`{"id":${JSON.stringify(row.id)}`));
                const tail = line?.slice(line.indexOf('"updatedAt"') + 38, -1) ?? '';
                expect(row.extra === null ? '' : `,${(row.extra as string).slice(1, -1)}`).toBe(tail);
              }
            }
          } finally {
            await sim.close();
            warehouse.close();
          }
        },
      ),
      { numRuns: 8, endOnFailure: true }, // no shrinking: each try is several pipeline runs
    );
  }, 300_000);
});
