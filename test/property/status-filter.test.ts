import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validatePublicQuery } from '../../src/schema/public-query.js';
import { validateCsvReport, validateWireReport } from '../../src/schema/report.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startTestReader } from '../helpers/reader.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const base = { destination: 'ROAD_CONTROL', createdAt: '2024-01-01T00:00:00Z' };

// Codes as upstreams write them: upper snake case, spaces, lower case, quotes, slashes, controls, blanks.
const code = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.constantFrom(
    'IN PROGRESS',
    'in_progress',
    ' OPEN ',
    "x' OR 1=1 --",
    '../etc',
    'A+B',
    'A&B',
    '100%',
    '\t',
  ),
  fc.string({
    unit: fc.constantFrom('A', ' ', '\u0000', '\n', '\u0085', '/', '%', '+', '&', '='),
    maxLength: 6,
  }),
  fc.string({ minLength: 126, maxLength: 130, unit: fc.constantFrom('A', 'b') }),
  // Past the BMP a character is two UTF-16 units: the limit counts characters (code points).
  fc.string({ minLength: 63, maxLength: 130, unit: fc.constantFrom('😀', '𓀀', 'A') }),
);

function validatorAccepts(field: 'status' | 'destination', value: string): boolean {
  const record = { id: 'r1', status: 'SUBMITTED', ...base, [field]: value };
  const wire = validateWireReport(record).ok;
  expect(validateCsvReport(record).ok).toBe(wire);
  return wire;
}

describe('status and destination: the reader filters accept what the validator accepts', () => {
  it('agree on every value (unit property over the shared rules)', () => {
    fc.assert(
      fc.property(code, fc.constantFrom('status' as const, 'destination' as const), (value, field) => {
        const params = new URLSearchParams({ [field]: value });
        const reader = validatePublicQuery('list', params).ok;
        expect(reader).toBe(validatorAccepts(field, value));
      }),
      { numRuns: 2000 },
    );
  });

  it('every code the validator stores can be asked for on the reader and returns its reports', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(code, { minLength: 1, maxLength: 8 }), async (codes) => {
        const statuses = codes.filter((c) => validatorAccepts('status', c));
        fc.pre(statuses.length > 0);
        const lines = statuses.map((status, i) =>
          JSON.stringify({ id: `r${i}`, status, ...base, destination: status }),
        );
        const file = join(tmp.dir, `d-${Date.now()}-${Math.random()}.ndjson`);
        writeFileSync(file, `${lines.join('\n')}\n`);
        const sim = await startTestSimulator({ dataset: await loadDataset(file) });
        const config = testConfig(sim.url, `${file}.duckdb`);
        const warehouse = await openTestWarehouse(config);
        const reader = await startTestReader(warehouse, config);
        try {
          const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
          expect(run?.counters.inserted).toBe(statuses.length);
          for (const [i, status] of statuses.entries()) {
            // The query string as a browser or `URLSearchParams` writes it (spaces as `+`, `%` escaped).
            const qs = new URLSearchParams({ status, destination: status }).toString();
            const res = await fetch(reader.api(`/reports?${qs}`));
            expect(res.status, qs).toBe(200);
            const ids = ((await res.json()) as Array<{ id: string }>).map((r) => r.id);
            expect(ids, qs).toEqual([`r${i}`]);
            const raw = await fetch(reader.api(`/reports?status=${encodeURIComponent(status)}`));
            expect(((await raw.json()) as unknown[]).length).toBe(1);
          }
        } finally {
          await reader.close();
          await sim.close();
          warehouse.close();
        }
      }),
      { numRuns: 6 },
    );
  });
});
