import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startPagedCsvServer } from '../helpers/paged-csv-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// Invariant (docs/guarantees.md, "Deletes and completeness"): no report is tombstoned unless the export is
// proven complete and consistent. Over generated hostile-but-legal paged CSV servers (with or without
// validators, capped page sizes, header-only pages, links, rows unpublished mid-export), run the real
// pipeline twice on a real DuckDB file and check every tombstone against the upstream's final state.

describe('tombstone invariant over generated paged CSV servers', () => {
  it('every tombstoned report is really gone upstream, and only a validated, complete run removes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          total: fc.integer({ min: 5, max: 40 }),
          pageSize: fc.integer({ min: 3, max: 12 }),
          cap: fc.option(fc.integer({ min: 2, max: 12 }), { nil: undefined }),
          validators: fc.boolean(),
          links: fc.boolean(),
          empty: fc.option(fc.record({ at: fc.integer({ min: 1, max: 4 }), shift: fc.boolean() }), {
            nil: undefined,
          }),
          unpublish: fc.array(fc.nat(), { maxLength: 3 }),
          unpublishAtPage: fc.integer({ min: 1, max: 4 }),
        }),
        async (g) => {
          const ids = Array.from({ length: g.total }, (_, i) => `p-${String(i).padStart(3, '0')}`);
          const gone = new Set(g.unpublish.map((n) => ids[n % ids.length]!));
          let armed = false;
          const server = await startPagedCsvServer(ids, {
            validators: g.validators,
            links: g.links,
            cap: g.cap,
            emptyPages: g.empty ? { at: [g.empty.at], shift: g.empty.shift } : undefined,
            beforePage: (page) => {
              if (armed && page === g.unpublishAtPage) {
                armed = false;
                server.ids = server.ids.filter((id) => !gone.has(id));
              }
            },
          });
          const tmp = tempDir('reports-sync-invariant-');
          const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), {
            csvPageSize: g.pageSize,
            retries: 2,
          });
          const warehouse = await openTestWarehouse(config);
          try {
            await syncTargetOnce(warehouse, config, 'csv');
            armed = gone.size > 0;
            await syncTargetOnce(warehouse, config, 'csv');
            const upstream = new Set(server.ids);
            const removed = await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NOT NULL`);
            for (const r of removed) expect(upstream.has(String(r.id)), String(r.id)).toBe(false);
            const runs = await query(warehouse, `SELECT complete, removed, tombstones_note FROM sync_runs`);
            for (const run of runs) {
              if (Number(run.removed) > 0) {
                expect(run.complete).toBe(true);
                expect(g.validators).toBe(true);
              }
            }
          } finally {
            warehouse.close();
            await server.close();
            tmp.cleanup();
          }
        },
      ),
      { numRuns: 10 },
    );
  }, 240_000);
});
