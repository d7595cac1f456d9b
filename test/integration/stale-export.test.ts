import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import {
  capturingLogger,
  openTestWarehouse,
  query,
  syncTargetOnce,
  tempDir,
  testConfig,
} from '../helpers/sync.js';

// A full export a cache served from a stale copy (a CDN copy still "fresh" to HTTP, sent with its `Age`) is
// an older picture of the upstream than the warehouse: it must not move a report back in time, bring back a
// report removed since, or remove one added since. An export no cache served is the upstream's word.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const report = (id: string, status: string, updatedAt: string) =>
  JSON.stringify({
    id,
    status,
    destination: 'ROAD_CONTROL',
    createdAt: '2024-01-01T00:00:00Z',
    updatedAt,
    location: { lat: 50, lng: 10 },
  });
const others = Array.from({ length: 40 }, (_, i) => report(`O-${i}`, 'SUBMITTED', '2024-01-01T00:00:00Z'));

/** A server whose export and `/stats` total are what `state` holds when asked, the export with `Age: age`. */
async function upstream(state: { lines: string[]; total: number; age?: number }) {
  const server = await startRawServer((req, res) => {
    if ((req.url ?? '').endsWith('/stats')) return void res.end(JSON.stringify({ total: state.total }));
    if (state.age !== undefined) res.setHeader('age', String(state.age));
    res.end(`${[...others, ...state.lines].join('\n')}\n`);
  });
  onTestFinished(() => server.close());
  const config = testConfig(server.url, join(tmp.dir, `w-${Math.random()}.duckdb`));
  const warehouse = await openTestWarehouse(config);
  onTestFinished(() => warehouse.close());
  return { config, warehouse };
}

describe('a full export older than the warehouse', () => {
  it('moves no report back, revives none and tombstones none, and says why', async () => {
    const day1 = [
      report('A', 'SUBMITTED', '2024-01-02T00:00:00Z'),
      report('B', 'SUBMITTED', '2024-01-02T00:00:00Z'),
    ];
    const state: { lines: string[]; total: number; age?: number } = { lines: day1, total: 42 };
    const { config, warehouse } = await upstream(state);
    await syncTargetOnce(warehouse, config, 'ndjson');
    // Day 2: A closed, B unpublished, C published.
    state.lines = [
      report('A', 'CLOSED', '2024-03-01T00:00:00Z'),
      report('C', 'SUBMITTED', '2024-03-01T00:00:00Z'),
    ];
    const [day2] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(day2?.counters).toMatchObject({ updated: 1, inserted: 1, removed: 1 });
    // Day 3: a cache serves day 1's export again (stale), while /stats is current: the counts agree (42).
    state.lines = day1;
    state.age = 86_400;
    const { logger, lines: logged } = await capturingLogger();
    const [stale] = await syncTargetOnce(warehouse, config, 'ndjson', logger);
    expect(stale?.status, stale?.error?.message).toBe('succeeded');
    expect(stale?.counters).toMatchObject({ updated: 0, revived: 0, removed: 0, inserted: 0, duplicates: 0 });
    const current = await query(
      warehouse,
      `SELECT id, status FROM reports WHERE removed_at IS NULL AND id IN ('A', 'B', 'C') ORDER BY id`,
    );
    expect(current).toEqual([
      { id: 'A', status: 'CLOSED' },
      { id: 'C', status: 'SUBMITTED' },
    ]);
    expect(logged.some((l) => l.older === 2)).toBe(true);
    const [note] = await query(warehouse, `SELECT tombstones_note FROM sync_runs WHERE run_id = $run`, {
      run: stale!.runId,
    });
    expect(String(note?.tombstones_note)).toMatch(
      /^no tombstones: .*a cache served it.*older than the stored/,
    );
    // The next current export takes up where day 2 left off.
    state.age = undefined;
    state.lines = [
      report('A', 'CLOSED', '2024-03-01T00:00:00Z'),
      report('C', 'SUBMITTED', '2024-03-01T00:00:00Z'),
    ];
    const [day4] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(day4?.counters).toMatchObject({ updated: 0, revived: 0, removed: 0 });
  });

  it('is not what a CSV export writing whole seconds is, after an NDJSON export writing milliseconds', async () => {
    const ms = [
      report('A', 'SUBMITTED', '2024-01-02T00:00:00.500Z'),
      report('B', 'SUBMITTED', '2024-01-02T00:00:00.250Z'),
    ];
    const header = 'id,status,destination,createdAt,updatedAt,lat,lng\r\n';
    const csvRows = ['A', ...others.map((o) => (JSON.parse(o) as { id: string }).id)].map(
      (id) =>
        `${id},SUBMITTED,ROAD_CONTROL,2024-01-01T00:00:00Z,${id === 'A' ? '2024-01-02T00:00:00Z' : '2024-01-01T00:00:00Z'},50,10`,
    );
    const state = { lines: ms, total: 42 };
    const server = await startRawServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: state.total }));
      if (url.pathname.endsWith('.csv')) {
        res.writeHead(200, { 'content-type': 'text/csv', etag: `"${csvRows.length}"`, age: '60' });
        return void res.end(
          url.searchParams.get('page') === '1' ? `${header}${csvRows.join('\r\n')}\r\n` : header,
        );
      }
      res.end(`${[...others, ...state.lines].join('\n')}\n`);
    });
    onTestFinished(() => server.close());
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), { csvPageSize: 100 });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    await syncTargetOnce(warehouse, config, 'ndjson');
    // B is unpublished: the CSV export, whose A differs from the stored A only below the second, removes it.
    state.total = 41;
    const [csv] = await syncTargetOnce(warehouse, config, 'csv');
    expect(csv?.status, csv?.error?.message).toBe('succeeded');
    const [note] = await query(warehouse, `SELECT tombstones_note FROM sync_runs WHERE run_id = $run`, {
      run: csv!.runId,
    });
    expect(csv?.counters, String(note?.tombstones_note)).toMatchObject({ removed: 1, revived: 0 });
  });

  it('served by no cache, is the upstream’s word: an older copy is taken, deletes inferred', async () => {
    const state = {
      lines: [
        report('A', 'CLOSED', '2024-03-01T00:00:00Z'),
        report('B', 'SUBMITTED', '2024-01-02T00:00:00Z'),
      ],
      total: 42,
    };
    const { config, warehouse } = await upstream(state);
    await syncTargetOnce(warehouse, config, 'ndjson');
    state.lines = [report('A', 'IN_PROGRESS', '2024-02-01T00:00:00Z')];
    state.total = 41;
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.counters).toMatchObject({ updated: 1, removed: 1 });
    const [a] = await query(warehouse, `SELECT status FROM reports WHERE id = 'A'`);
    expect(a?.status).toBe('IN_PROGRESS');
  });

  it('takes a correction of an updatedAt in the future, though it is earlier', async () => {
    const state = { lines: [report('F', 'SUBMITTED', '2099-01-01T00:00:00Z')], total: 41, age: 60 };
    const { config, warehouse } = await upstream(state);
    await syncTargetOnce(warehouse, config, 'ndjson');
    state.lines = [report('F', 'IN_PROGRESS', '2024-05-01T00:00:00Z')];
    const [fixed] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(fixed?.counters).toMatchObject({ updated: 1 });
    const [f] = await query(warehouse, `SELECT status, year(updated_at) AS year FROM reports WHERE id = 'F'`);
    expect(f).toEqual({ status: 'IN_PROGRESS', year: 2024 });
  });

  it('from a cache, keeps the copy with the latest updatedAt across runs, the last read among equals (property)', async () => {
    const months = ['2024-01', '2024-02', '2024-03'];
    const copyArb = fc.record({
      month: fc.constantFrom(...months),
      status: fc.constantFrom('SUBMITTED', 'IN_PROGRESS', 'RESOLVED', 'CLOSED'),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(copyArb, { minLength: 2, maxLength: 4 }), async (copies) => {
        const state = { lines: [] as string[], total: 41, age: 60 };
        const { config, warehouse } = await upstream(state);
        let latest = copies[0]!;
        for (const copy of copies) {
          state.lines = [report('Q', copy.status, `${copy.month}-01T00:00:00Z`)];
          const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
          expect(run?.status).toBe('succeeded');
          if (copy.month >= latest.month) latest = copy;
        }
        const [q] = await query(
          warehouse,
          `SELECT status, strftime(updated_at, '%Y-%m') AS month FROM reports WHERE id = 'Q'`,
        );
        expect(q).toEqual({ status: latest.status, month: latest.month });
      }),
      { numRuns: 10 },
    );
  });
});
