import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startTestSimulator, type TestSimulator } from '../helpers/simulator.js';
import { startRawServer, type RawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

function statuses(sim: TestSimulator): Map<string, string> {
  return new Map([...sim.dataset.snapshot().published()].map((r) => [r.id, r.status]));
}

/** The simulator's NDJSON export as lines (a dataset file a second simulator can serve, whole or in part). */
async function exportLines(sim: TestSimulator): Promise<string[]> {
  const text = await (await fetch(sim.api('/reports.ndjson'))).text();
  return text.split('\n').filter((l) => l !== '');
}

/**
 * A proxy in front of the simulator that answers `/reports/stats` itself: with `stats` as JSON, or with
 * a 503 when `stats` is `503`. Everything else is passed through.
 */
async function statsProxy(sim: TestSimulator, stats: unknown): Promise<RawServer> {
  return startRawServer((req, res) => {
    if (req.url?.endsWith('/reports/stats')) {
      if (stats === 503) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end('{"error":{"code":"UNAVAILABLE","message":"down"}}');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(stats));
      }
      return;
    }
    void fetch(`${sim.url}${req.url ?? '/'}`, { redirect: 'manual' }).then(async (r) => {
      const headers = Object.fromEntries(
        [...r.headers].filter(([k]) => !['transfer-encoding', 'connection', 'content-length'].includes(k)),
      );
      res.writeHead(r.status, headers);
      res.end(Buffer.from(await r.arrayBuffer()));
    });
  });
}

async function versions(warehouse: Parameters<typeof query>[0], id: string) {
  return query(
    warehouse,
    `SELECT change, status, valid_from, valid_to FROM report_versions WHERE id = $id ORDER BY valid_from, change`,
    { id },
  );
}

describe('history and tombstones', () => {
  it('after 3 simulated days records the status moves as versions and the unpublished reports as tombstones', async () => {
    const sim = await startTestSimulator({ generate: { n: 1000, seed: 5 } });
    const path = join(tmp.dir, 'w.duckdb');
    const warehouse = await openTestWarehouse(testConfig(sim.url, path));
    try {
      const [first] = await syncTargetOnce(warehouse, testConfig(sim.url, path), 'ndjson');
      expect(first?.counters.inserted).toBe(1000);
      const before = statuses(sim);
      const advanced = (await (
        await fetch(`${sim.url}/__admin/advance?days=3`, { method: 'POST' })
      ).json()) as { moved: number; added: number; unpublished: number };
      const after = statuses(sim);
      const moved = [...after].filter(([id, s]) => before.has(id) && before.get(id) !== s);
      const gone = [...before.keys()].filter((id) => !after.has(id));
      const fresh = [...after.keys()].filter((id) => !before.has(id));
      expect(gone.length).toBe(advanced.unpublished);
      expect(gone.length).toBeGreaterThan(0);
      expect(moved.length).toBeGreaterThan(0);

      // The second sync reads the CSV export: tombstones come from either source.
      const config = testConfig(sim.url, path, { csvPageSize: 200 });
      const [second] = await syncTargetOnce(warehouse, config, 'csv');
      expect(second?.status).toBe('succeeded');
      expect(second?.counters).toMatchObject({
        inserted: fresh.length,
        updated: moved.length,
        removed: gone.length,
        revived: 0,
      });

      for (const [id, status] of moved) {
        const v = await versions(warehouse, id);
        expect(
          v.map((x) => [x.change, x.status]),
          id,
        ).toEqual([
          ['insert', before.get(id)],
          ['update', status],
        ]);
        expect(v[0]?.valid_to).toEqual(v[1]?.valid_from);
        expect(v[1]?.valid_to).toBeNull();
      }
      for (const id of gone) {
        const v = await versions(warehouse, id);
        expect(
          v.map((x) => x.change),
          id,
        ).toEqual(['insert', 'remove']);
        expect(v[1]?.valid_to).toBeNull();
        const [r] = await query(warehouse, 'SELECT removed_at FROM reports WHERE id = $id', { id });
        expect(r?.removed_at).toEqual(v[1]?.valid_from);
      }
      const [run] = await query(
        warehouse,
        `SELECT removed, tombstones_note, stats_total_upstream, stats_total_warehouse, stats_total_diff
         FROM sync_runs WHERE run_id = $run`,
        { run: second?.runId ?? '' },
      );
      expect(run).toMatchObject({
        removed: gone.length,
        stats_total_upstream: after.size,
        stats_total_warehouse: after.size,
        stats_total_diff: 0,
      });
      expect(String(run?.tombstones_note)).toMatch(new RegExp(`^${gone.length} reports missing`));
      // SCD2: exactly one open version per report, and a removed report's open version is its removal.
      const [scd2] = await query(
        warehouse,
        `SELECT count(*) FILTER (WHERE n <> 1) AS bad, count(*) AS ids FROM
           (SELECT id, count(*) FILTER (WHERE valid_to IS NULL) AS n FROM report_versions GROUP BY id)`,
      );
      expect(scd2).toEqual({ bad: 0, ids: 1000 + fresh.length });
      // The two snapshots of the run agree metric by metric (the warehouse counters have the upstream shape).
      const mismatched = await query(
        warehouse,
        `SELECT coalesce(u.metric, w.metric) AS metric, u.value AS upstream, w.value AS warehouse
         FROM (SELECT * FROM stats_values WHERE run_id = $run AND source = 'upstream') u
         FULL JOIN (SELECT * FROM stats_values WHERE run_id = $run AND source = 'warehouse') w USING (metric)
         WHERE u.value IS DISTINCT FROM w.value`,
        { run: second?.runId ?? '' },
      );
      expect(mismatched).toEqual([]);
      const [submitted] = await query(
        warehouse,
        `SELECT value FROM stats_values WHERE run_id = $run AND source = 'upstream' AND metric = 'byStatus.SUBMITTED'`,
        { run: second?.runId ?? '' },
      );
      expect(submitted?.value).toBe([...after.values()].filter((s) => s === 'SUBMITTED').length);
    } finally {
      warehouse.close();
    }
  });

  it('infers no tombstones from a truncated export (half the rows)', async () => {
    const full = await startTestSimulator({ generate: { n: 400, seed: 9 } });
    const lines = await exportLines(full);
    writeFileSync(join(tmp.dir, 'half.ndjson'), `${lines.slice(0, 200).join('\n')}\n`);
    const half = await startTestSimulator({ dataset: await loadDataset(join(tmp.dir, 'half.ndjson')) });
    const path = join(tmp.dir, 'w.duckdb');
    const warehouse = await openTestWarehouse(testConfig(full.url, path));
    try {
      await syncTargetOnce(warehouse, testConfig(full.url, path), 'ndjson');
      const [run] = await syncTargetOnce(warehouse, testConfig(half.url, path), 'ndjson');
      expect(run?.status).toBe('succeeded');
      expect(run?.counters).toMatchObject({ recordsRead: 200, removed: 0 });
      const [row] = await query(warehouse, 'SELECT tombstones_note FROM sync_runs WHERE run_id = $run', {
        run: run?.runId ?? '',
      });
      expect(String(row?.tombstones_note)).toBe(
        'no tombstones: the export holds 200 reports, fewer than 90% of the 400 current ones ' +
          '(REPORTS_TOMBSTONE_MIN_SHARE): truncated or partial?',
      );
      const [current] = await query(warehouse, 'SELECT count(*) AS n FROM reports WHERE removed_at IS NULL');
      expect(current?.n).toBe(400);
    } finally {
      warehouse.close();
    }
  });

  it('infers no tombstones when /stats disagrees with the export or is unavailable, and stores any stats shape', async () => {
    const sim = await startTestSimulator({ generate: { n: 300, seed: 2 } });
    const path = join(tmp.dir, 'w.duckdb');
    const warehouse = await openTestWarehouse(testConfig(sim.url, path));
    try {
      await syncTargetOnce(warehouse, testConfig(sim.url, path), 'ndjson');
      sim.advanceDays(1); // at least one report unpublished: a full sync would tombstone it

      const deep = Array.from({ length: 100 }).reduce<unknown>((inner) => ({ a: inner }), { total: 300 });
      const cases: Array<[unknown, RegExp]> = [
        [{ total: 3 }, /^no tombstones: the export holds \d+ reports but \/stats total says 3 /],
        [503, /^no tombstones: no upstream \/stats total .*\/stats failed: HTTP 503/],
        [
          { counts: { open: 3, nested: [1, 2.5] }, label: 'x' },
          /^no tombstones: no upstream \/stats total .*no `total` that is a count/,
        ],
        // A total that is no count would be rounded in print, or read as "more than the export".
        [{ total: 300.5 }, /^no tombstones: no upstream \/stats total .*no `total` that is a count/],
        [{ total: -1 }, /^no tombstones: no upstream \/stats total .*no `total` that is a count/],
        // Nested past any counters body: refused, never walked (a walk per level overflowed the stack).
        [deep, /^no tombstones: no upstream \/stats total .*nests 101 levels deep/],
      ];
      for (const [stats, note] of cases) {
        const proxy = await statsProxy(sim, stats);
        try {
          const [run] = await syncTargetOnce(
            warehouse,
            testConfig(proxy.url, path, { retries: 0 }),
            'ndjson',
          );
          expect(run?.status).toBe('succeeded');
          expect(run?.counters.removed).toBe(0);
          const [row] = await query(warehouse, 'SELECT tombstones_note FROM sync_runs WHERE run_id = $run', {
            run: run?.runId ?? '',
          });
          expect(String(row?.tombstones_note)).toMatch(note);
          if (typeof stats === 'object') {
            const [snapshot] = await query(
              warehouse,
              `SELECT body::VARCHAR AS body FROM stats_snapshots WHERE run_id = $run AND source = 'upstream'`,
              { run: run?.runId ?? '' },
            );
            // A refused body is not stored: there is no snapshot of it.
            if (stats === deep) {
              expect(snapshot).toBeUndefined();
              continue;
            }
            expect(JSON.parse(String(snapshot?.body))).toEqual(stats);
            const values = await query(
              warehouse,
              `SELECT metric, value FROM stats_values WHERE run_id = $run AND source = 'upstream' ORDER BY metric`,
              { run: run?.runId ?? '' },
            );
            if ('counts' in (stats as object)) {
              expect(values).toEqual([
                { metric: 'counts.nested.0', value: 1 },
                { metric: 'counts.nested.1', value: 2.5 },
                { metric: 'counts.open', value: 3 },
              ]);
            }
          }
        } finally {
          await proxy.close();
        }
      }
      const [removed] = await query(
        warehouse,
        'SELECT count(*) AS n FROM reports WHERE removed_at IS NOT NULL',
      );
      expect(removed?.n).toBe(0);
      // With a truthful /stats the same export is tombstoned.
      const [run] = await syncTargetOnce(warehouse, testConfig(sim.url, path), 'ndjson');
      expect(run?.counters.removed).toBeGreaterThan(0);
    } finally {
      warehouse.close();
    }
  });

  it('infers tombstones when /stats counts a record this run quarantined (valid to the upstream)', async () => {
    const line = (i: number) =>
      JSON.stringify({
        id: `q-${i}`,
        status: 'SUBMITTED',
        destination: 'ROAD_CONTROL',
        // One record the upstream thinks valid and this tool quarantines: a date it cannot read.
        createdAt: i === 3 ? '16.02.2016 21:26' : '2024-01-01T00:00:00.000Z',
      });
    let ids = Array.from({ length: 30 }, (_, i) => i);
    const server = await startRawServer((req, res) => {
      const stats = req.url?.endsWith('/stats');
      res.writeHead(200, { 'content-type': stats ? 'application/json' : 'application/x-ndjson' });
      res.end(stats ? JSON.stringify({ total: ids.length }) : ids.map((i) => `${line(i)}\n`).join(''));
    });
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { maxRejectRatio: 0.5 });
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      ids = ids.filter((i) => i !== 5);
      const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect([run?.status, run?.counters.removed]).toEqual(['succeeded', 1]);
      expect(await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NOT NULL`)).toEqual([
        { id: 'q-5' },
      ]);
    } finally {
      warehouse.close();
      await server.close();
    }
  });

  it('revives a report that comes back, keeping one open SCD2 version per report', async () => {
    const source = await startTestSimulator({ generate: { n: 50, seed: 4 } });
    const lines = await exportLines(source);
    const gone = JSON.parse(lines[7] ?? '{}') as { id: string };
    writeFileSync(join(tmp.dir, 'all.ndjson'), `${lines.join('\n')}\n`);
    writeFileSync(join(tmp.dir, 'without.ndjson'), `${lines.filter((_, i) => i !== 7).join('\n')}\n`);
    const all = await startTestSimulator({ dataset: await loadDataset(join(tmp.dir, 'all.ndjson')) });
    const without = await startTestSimulator({ dataset: await loadDataset(join(tmp.dir, 'without.ndjson')) });
    const path = join(tmp.dir, 'w.duckdb');
    const warehouse = await openTestWarehouse(testConfig(all.url, path));
    try {
      await syncTargetOnce(warehouse, testConfig(all.url, path), 'ndjson');
      const [removal] = await syncTargetOnce(warehouse, testConfig(without.url, path), 'ndjson');
      expect(removal?.counters.removed).toBe(1);
      const [back] = await syncTargetOnce(warehouse, testConfig(all.url, path), 'csv');
      expect(back?.counters).toMatchObject({ revived: 1, removed: 0, inserted: 0, updated: 0 });

      const v = await versions(warehouse, gone.id);
      expect(v.map((x) => x.change)).toEqual(['insert', 'remove', 'revive']);
      expect(v[0]?.valid_to).toEqual(v[1]?.valid_from);
      expect(v[1]?.valid_to).toEqual(v[2]?.valid_from);
      expect(v[2]?.valid_to).toBeNull();
      const [r] = await query(warehouse, 'SELECT removed_at FROM reports WHERE id = $id', { id: gone.id });
      expect(r?.removed_at).toBeNull();
      const [open] = await query(
        warehouse,
        `SELECT count(*) AS ids, count(*) FILTER (WHERE n = 1) AS one FROM
           (SELECT id, count(*) FILTER (WHERE valid_to IS NULL) AS n FROM report_versions GROUP BY id)`,
      );
      expect(open).toEqual({ ids: 50, one: 50 });
    } finally {
      warehouse.close();
    }
  });

  it('`--source stats` snapshots upstream and warehouse counters in a run of its own', async () => {
    const sim = await startTestSimulator({ generate: { n: 120, seed: 6 } });
    const path = join(tmp.dir, 'w.duckdb');
    const config = testConfig(sim.url, path);
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      sim.advanceDays(2);
      const [run] = await syncTargetOnce(warehouse, config, 'stats');
      expect(run).toMatchObject({ source: 'stats', status: 'succeeded' });
      const [row] = await query(
        warehouse,
        `SELECT job, source, stats_total_upstream AS up, stats_total_warehouse AS wh, stats_total_diff AS diff
         FROM sync_runs WHERE run_id = $run`,
        { run: run?.runId ?? '' },
      );
      const total = sim.dataset.stats().total;
      expect(row).toEqual({ job: 'snapshot-stats', source: 'stats', up: total, wh: 120, diff: total - 120 });
      const snapshots = await query(
        warehouse,
        `SELECT source, body->>'$.total' AS total FROM stats_snapshots WHERE run_id = $run ORDER BY source`,
        { run: run?.runId ?? '' },
      );
      expect(snapshots).toEqual([
        { source: 'upstream', total: String(total) },
        { source: 'warehouse', total: '120' },
      ]);
    } finally {
      warehouse.close();
    }
  });
});
