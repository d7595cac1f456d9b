import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { publishToPostgres } from '../../src/warehouse/postgres/publish-postgres.js';
import { pgQuery, pgRows, duckRows, holdsNul } from '../helpers/pg-parity.js';
import { postgresForSuite } from '../helpers/postgres.js';
import { startRawServer } from '../helpers/raw-server.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

const postgres = postgresForSuite();
let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

type Wire = Record<string, unknown>;

/** An NDJSON upstream serving `serve(reports)` as they are now, starting with 20 generated reports. */
async function upstream() {
  const sim = await startTestSimulator({ generate: { n: 20, seed: 4 } });
  const text = await (await fetch(sim.api('/reports.ndjson'))).text();
  const reports = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Wire);
  let lines = reports;
  const raw = await startRawServer((req, res) => {
    const ndjson = req.url?.includes('.ndjson');
    res.writeHead(ndjson ? 200 : 404, { 'content-type': 'application/x-ndjson' });
    res.end(ndjson ? lines.map((r) => JSON.stringify(r)).join('\n') + '\n' : '{}');
  });
  onTestFinished(() => raw.close());
  return { url: raw.url, reports, serve: (next: Wire[]) => (lines = next) };
}

const REFUSED = `SELECT row_key, reason FROM publish_refused WHERE table_name = 'report_rows' ORDER BY row_key`;

describe('text PostgreSQL cannot store (U+0000)', () => {
  it('a report holding U+0000 is kept out of PostgreSQL and listed with its reason; it comes back once clean', async (ctx) => {
    const db = await postgres.database(ctx);
    const up = await upstream();
    const ids = up.reports.map((r) => String(r.id));
    const withNul = (i: number, change: (r: Wire) => Wire) =>
      up.reports.map((r, j) => (j === i ? change({ ...r }) : r));
    let served = withNul(0, (r) => ({ ...r, description: 'vor\u0000nach' }));
    served = served.map((r, j) => (j === 1 ? { ...r, note: 'x\u0000y' } : r));
    up.serve(served);
    const config = testConfig(up.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      // DuckDB keeps the text byte-exact.
      const [kept] = await query(warehouse, `SELECT description FROM reports WHERE id = $id`, {
        id: ids[0]!,
      });
      expect(kept?.description).toBe('vor\u0000nach');

      const first = await publishToPostgres(warehouse, db);
      expect(first.tables.report_rows).toEqual({ rows: 18, refused: 2 });
      expect(await pgQuery(db.url, db.schema, REFUSED)).toEqual(
        [
          {
            row_key: JSON.stringify([ids[0]]),
            reason: expect.stringMatching(/U\+0000.* in description: PostgreSQL cannot store it/) as unknown,
          },
          { row_key: JSON.stringify([ids[1]]), reason: expect.stringMatching(/ in extra: /) as unknown },
        ].sort((a, b) => (a.row_key < b.row_key ? -1 : 1)),
      );
      const inPg = await pgQuery<{ id: string }>(db.url, db.schema, `SELECT id FROM reports`);
      expect(inPg.map((r) => r.id).sort()).toEqual(ids.slice(2).sort());

      // Report 2 (in PostgreSQL) gets U+0000: its stale row leaves; report 0 is clean again: it comes back.
      served = served.map((r, j) => (j === 0 ? up.reports[0]! : j === 2 ? { ...r, address: '\u0000' } : r));
      up.serve(served);
      await syncTargetOnce(warehouse, config, 'ndjson');
      const second = await publishToPostgres(warehouse, db);
      expect(second.mode).toBe('changes');
      const keys = (await pgQuery<{ row_key: string }>(db.url, db.schema, REFUSED)).map((r) => r.row_key);
      expect(keys.sort()).toEqual([JSON.stringify([ids[1]]), JSON.stringify([ids[2]])].sort());
      const after = await pgQuery<{ id: string }>(db.url, db.schema, `SELECT id FROM reports`);
      expect(after.map((r) => r.id).sort()).toEqual([ids[0]!, ...ids.slice(3)].sort());
      // Every other row equals DuckDB's, the versions holding U+0000 left out the same way.
      for (const relation of ['reports', 'report_versions']) {
        const expected = (await duckRows(warehouse, relation)).filter((r) => !holdsNul(r));
        expect(await pgRows(db.url, db.schema, relation), relation).toEqual(expected);
      }
    } finally {
      warehouse.close();
    }
  });
});
