import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startTestPgReader, startTestReader } from '../helpers/reader.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

/**
 * The reader on PostgreSQL answers what the DuckDB reader answers on the same warehouse, after runs with
 * new, changed and removed reports and a publish, byte for byte: the same list pages for every filter, the
 * same stats, the same exports (unknown fields as received: reader-extra.test.ts gives them in orders and
 * number notations jsonb would change), the same error answers; and clients reading it while runs publish
 * always get one published state per ETag.
 */

const postgres = postgresForSuite();

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

async function get(
  url: string,
): Promise<{ status: number; type: string | null; link: string | null; body: string }> {
  const res = await fetch(url);
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    link: res.headers.get('link'),
    body: await res.text(),
  };
}

const pathOf = (link: string | null) =>
  link === null ? null : new URL(link, 'http://x').pathname + new URL(link, 'http://x').search;

describe('the reader on PostgreSQL', () => {
  it('answers byte for byte as the DuckDB reader on the same warehouse after runs with changes and removals', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({
      generate: { n: 700, seed: 29 },
      faults: ['ndjson:malformed,every=131'],
    });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { readerCacheBytes: 0 });
    const warehouse = await openTestWarehouse(config);
    const duck = await startTestReader(warehouse, config);
    const pgReader = await startTestPgReader(db, config);
    try {
      await syncTargetOnce(warehouse, config, 'default');
      await fetch(`${sim.url}/__admin/advance?days=2`, { method: 'POST' });
      const [csvRun] = await syncTargetOnce(warehouse, config, 'csv');
      expect(csvRun?.counters.removed).toBeGreaterThan(0);
      await publishToPostgres(warehouse, db);

      const stats = JSON.parse((await get(duck.api('/reports/stats'))).body) as {
        total: number;
        byStatus: Record<string, number>;
        byDestination: Record<string, number>;
      };
      expect((await get(pgReader.api('/reports/stats'))).body).toBe(JSON.stringify(stats));
      const filters = [
        '',
        ...Object.keys(stats.byStatus).map((s) => `status=${s}&`),
        ...Object.keys(stats.byDestination).map((d) => `destination=${d}&`),
        `status=${Object.keys(stats.byStatus)[0]}&destination=${Object.keys(stats.byDestination)[0]}&`,
        'status=NO_SUCH&',
      ];
      for (const filter of filters) {
        for (const [pageSize, pages] of [
          [50, 4],
          [7, 3],
          [1000, 2],
        ] as const) {
          for (let page = 1; page <= pages; page++) {
            const path = `/reports?${filter}pageSize=${pageSize}&page=${page}`;
            const [a, b] = await Promise.all([get(duck.api(path)), get(pgReader.api(path))]);
            expect(b.status, path).toBe(a.status);
            expect(b.body, path).toBe(a.body);
          }
        }
        const geo = `/reports.geojson?${filter}`;
        const [a, b] = await Promise.all([get(duck.api(geo)), get(pgReader.api(geo))]);
        expect(b.type).toBe(a.type);
        expect(b.body, geo).toBe(a.body);
      }
      const [nd1, nd2] = await Promise.all([
        get(duck.api('/reports.ndjson')),
        get(pgReader.api('/reports.ndjson')),
      ]);
      expect(nd2.body).toBe(nd1.body);
      expect(nd2.body.trimEnd().split('\n')).toHaveLength(stats.total);
      for (const [pageSize, page] of [
        [100, 1],
        [100, 3],
        [250, 2],
        [10_000, 1],
        [100, 99],
      ] as const) {
        const path = `/reports.csv?pageSize=${pageSize}&page=${page}`;
        const [a, b] = await Promise.all([get(duck.api(path)), get(pgReader.api(path))]);
        expect(b.type).toBe(a.type);
        expect(pathOf(b.link), path).toBe(pathOf(a.link));
        expect(b.body, path).toBe(a.body);
      }
      for (const bad of [
        '/reports?page=0',
        '/reports?pageSize=1001',
        '/reports?status=',
        '/reports?color=red',
        '/reports.csv?pageSize=abc',
        '/reports.ndjson?x=1',
        '/reports/stats?page=1',
        '/nothing-here',
      ]) {
        const [a, b] = await Promise.all([get(duck.api(bad)), get(pgReader.api(bad))]);
        expect(b.status, bad).toBe(a.status);
        expect(b.body, bad).toBe(a.body);
      }
    } finally {
      await pgReader.app.close();
      await duck.close();
      warehouse.close();
    }
  });

  it('clients reading while runs publish get, for each ETag, an export as long as the stats total, and no 5xx', async (ctx) => {
    const db = await postgres.database(ctx);
    const sim = await startTestSimulator({ generate: { n: 600, seed: 41 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, {
      readerValidatorsTtlMs: 0,
      // No export body kept: every export is read again, in its own snapshot.
      readerSpoolBytes: 0,
    });
    const warehouse = await openTestWarehouse(config);
    await syncTargetOnce(warehouse, config, 'ndjson');
    await publishToPostgres(warehouse, db);
    const reader = await startTestPgReader(db, config);
    const totals = new Map<string, Set<number>>();
    const note = (etag: string | null, n: number) => {
      expect(etag).not.toBeNull();
      const seen = totals.get(etag!) ?? new Set<number>();
      seen.add(n);
      totals.set(etag!, seen);
    };
    const statuses: number[] = [];
    let publishing = true;
    const client = async (i: number) => {
      while (publishing) {
        const which = i % 3;
        if (which === 0) {
          const res = await fetch(reader.api('/reports.ndjson'));
          statuses.push(res.status);
          note(res.headers.get('etag'), (await res.text()).split('\n').filter((l) => l !== '').length);
        } else if (which === 1) {
          const res = await fetch(reader.api('/reports/stats'));
          statuses.push(res.status);
          note(res.headers.get('etag'), ((await res.json()) as { total: number }).total);
        } else {
          const res = await fetch(reader.api(`/reports?pageSize=100&page=${1 + (statuses.length % 8)}`));
          statuses.push(res.status);
          await res.arrayBuffer();
        }
      }
    };
    const clients = Array.from({ length: 12 }, (_, i) => client(i));
    try {
      for (let day = 0; day < 4; day++) {
        await fetch(`${sim.url}/__admin/advance?days=1`, { method: 'POST' });
        await syncTargetOnce(warehouse, config, day % 2 === 0 ? 'csv' : 'ndjson');
        await publishToPostgres(warehouse, db);
      }
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      publishing = false;
      await Promise.all(clients);
      await reader.app.close();
      warehouse.close();
    }
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(new Set(statuses)).toEqual(new Set([200]));
    // Several published states were read, and each gave one count whichever answer read it.
    expect(totals.size).toBeGreaterThan(1);
    for (const [etag, seen] of totals) expect([...seen], etag).toHaveLength(1);
  });
});
