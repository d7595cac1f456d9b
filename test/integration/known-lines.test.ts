import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KnownLines } from '../../src/normalize/known-lines.js';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startSimulator } from '../../src/simulator/server.js';
import { runSync } from '../../src/sync/run-sync.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { createHttpAgent } from '../../src/upstream/http-agent.js';
import { collectGarbage } from '../../src/util/collect-garbage.js';
import { silentLogger } from '../../src/util/logger.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { mergeStaging, prepareMerge } from '../../src/warehouse/merge.js';
import { recordSeen } from '../../src/warehouse/merge-seen.js';
import { startRawServer, type RawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncOnce, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// Issue #7: a re-sync skips lines a current report was loaded from (raw-line hash, before JSON.parse and
// validation) and only marks those reports seen; everything else keeps the full path.

const line = (id: string, status: string, updatedAt: string) =>
  JSON.stringify({
    id,
    status,
    destination: 'ROAD_CONTROL',
    category: 'Pothole',
    description: 'Schlagloch',
    location: { lat: 50.9, lng: 6.9 },
    address: 'Domkloster 4',
    createdAt: '2024-01-01T00:00:00.000Z',
    updatedAt,
  });

describe('re-sync with known lines', () => {
  let tmp: ReturnType<typeof tempDir>;
  let server: RawServer;
  let body = '';
  /** When set, the next answer only: sends these bytes of a longer body, then resets the connection. */
  let cutOnce: string | undefined;
  let warehouse: Warehouse;

  beforeEach(async () => {
    tmp = tempDir();
    cutOnce = undefined;
    server = await startRawServer((_req, res) => {
      if (cutOnce !== undefined) {
        const part = cutOnce;
        cutOnce = undefined;
        res.writeHead(200, {
          'content-type': 'application/x-ndjson',
          'content-length': String(Buffer.byteLength(part) + 1000),
        });
        res.write(part, () => setTimeout(() => res.destroy(), 300));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(body);
    });
    warehouse = await openTestWarehouse(testConfig(server.url, join(tmp.dir, 'w.duckdb')));
  });
  afterEach(async () => {
    warehouse.close();
    await server.close();
    tmp.cleanup();
  });

  const sync = () => syncOnce(warehouse, testConfig(server.url, warehouse.path), ndjsonSource);

  it('marks unchanged reports seen without parsing their lines again', async () => {
    body = [
      line('A', 'SUBMITTED', '2024-01-02T00:00:00.000Z'),
      line('B', 'SUBMITTED', '2024-01-02T00:00:00.000Z'),
    ]
      .map((l) => `${l}\n`)
      .join('');
    const first = await sync();
    expect(first.counters.inserted).toBe(2);
    // Proof that a known line is not parsed: a stored content hash that no longer matches its line would
    // be "updated" by the full path, but a skipped line leaves the row alone.
    await query(
      warehouse,
      `UPDATE report_rows SET content_hash = 'tampered', csv_hash = 'tampered' WHERE id = 'A'`,
    );
    const second = await sync();
    expect(second.status).toBe('succeeded');
    expect(second.counters).toMatchObject({ recordsRead: 2, recordsLoaded: 2, unchanged: 2, updated: 0 });
    const rows = await query(warehouse, 'SELECT id, content_hash, run_id FROM reports ORDER BY id');
    expect(rows.map((r) => [r.id, r.content_hash === 'tampered', r.run_id])).toEqual([
      ['A', true, second.runId],
      ['B', false, second.runId],
    ]);
    const [versions] = await query(warehouse, 'SELECT count(*) AS n FROM report_versions');
    expect(versions?.n).toBe(2);
  });

  it('lets go of the known-line set once its marks are staged: unreachable during the merge', async () => {
    body = ['A', 'B', 'C'].map((id) => `${line(id, 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n`).join('');
    await sync();
    // Weak references only: a spy would keep each set it returned.
    const built: WeakRef<KnownLines>[] = [];
    const build = KnownLines.build;
    KnownLines.build = async (...args) => {
      const set = await build.apply(KnownLines, args);
      built.push(new WeakRef(set));
      return set;
    };
    const config = testConfig(server.url, warehouse.path);
    const connection = await warehouse.connect();
    const dispatcher = createHttpAgent(config);
    let reachable: boolean | undefined;
    try {
      const second = await runSync({
        connection,
        config,
        dispatcher,
        logger: silentLogger(),
        source: ndjsonSource,
        afterMerge: async () => {
          collectGarbage();
          reachable = built[0]?.deref() !== undefined;
        },
      });
      expect(second.counters).toMatchObject({ recordsRead: 3, unchanged: 3 });
    } finally {
      KnownLines.build = build;
      connection.closeSync();
      await dispatcher.close();
    }
    expect(built).toHaveLength(1);
    expect(reachable).toBe(false);
  });

  it('marks seen only the reports whose known lines came, not a current report missing from the run', async () => {
    const lines = ['A', 'B', 'C'].map((id) => `${line(id, 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n`);
    body = lines.join('');
    const first = await sync();
    body = lines.slice(0, 2).join(''); // C is gone; no /stats here, so it is not tombstoned either
    const second = await sync();
    expect(second.counters).toMatchObject({ recordsRead: 2, unchanged: 2, removed: 0 });
    const rows = await query(
      warehouse,
      `SELECT id, run_id, last_seen_at = (SELECT max(last_seen_at) FROM reports) AS latest
       FROM reports ORDER BY id`,
    );
    expect(rows).toEqual([
      { id: 'A', run_id: second.runId, latest: true },
      { id: 'B', run_id: second.runId, latest: true },
      { id: 'C', run_id: first.runId, latest: false },
    ]);
  });

  it('weighs a known line against a changed line of the same report: later updatedAt, then later line', async () => {
    const t1 = '2024-01-02T00:00:00.000Z';
    const t2 = '2024-01-03T00:00:00.000Z';
    const cases = [
      // [export lines after the first sync of A SUBMITTED at t1, the status A ends with]
      { lines: [line('A', 'SUBMITTED', t1), line('A', 'RESOLVED', t2)], status: 'RESOLVED' },
      { lines: [line('A', 'RESOLVED', t2), line('A', 'SUBMITTED', t1)], status: 'RESOLVED' },
      { lines: [line('A', 'SUBMITTED', t1), line('A', 'REJECTED', t1)], status: 'REJECTED' },
      { lines: [line('A', 'REJECTED', t1), line('A', 'SUBMITTED', t1)], status: 'SUBMITTED' },
    ];
    for (const [i, { lines, status }] of cases.entries()) {
      const config = testConfig(server.url, join(tmp.dir, `case-${i}.duckdb`));
      const w = await openTestWarehouse(config);
      try {
        body = `${line('A', 'SUBMITTED', t1)}\n`;
        await syncOnce(w, config, ndjsonSource);
        body = lines.map((l) => `${l}\n`).join('');
        const run = await syncOnce(w, config, ndjsonSource);
        expect(run.status).toBe('succeeded');
        expect(run.counters).toMatchObject({ recordsLoaded: 2, duplicates: 1 });
        const rows = await query(w, 'SELECT id, status FROM reports');
        expect(rows, JSON.stringify(lines)).toEqual([{ id: 'A', status }]);
        expect(run.counters.updated).toBe(status === 'SUBMITTED' ? 0 : 1);
      } finally {
        w.close();
      }
    }
  });

  it('forgets the known lines an attempt cut short had read: the retry alone says what the run saw', async () => {
    const [a, b, c] = ['A', 'B', 'C'].map((id) => `${line(id, 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n`);
    body = `${a}${b}${c}`;
    const first = await sync();
    // The first attempt reads A and ~2 MiB of new reports (blocks of ~1 MiB are decoded as they fill),
    // then the connection drops; the export the retry reads no longer holds A, nor those.
    const filler = Array.from(
      { length: 8000 },
      (_, i) => `${line(`N-${i}`, 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n`,
    );
    cutOnce = `${a}${b}${filler.join('')}`;
    body = `${b}${c}`;
    const second = await sync();
    expect(second.status).toBe('succeeded');
    expect(second.counters).toMatchObject({ recordsRead: 2, recordsLoaded: 2, unchanged: 2, duplicates: 0 });
    expect(server.requests.length).toBe(3);
    const rows = await query(
      warehouse,
      `SELECT r.id, r.run_id, w.unseen_since IS NOT NULL AS unseen
       FROM reports r JOIN report_rows w ON w.id = r.id AND w.removed_at IS NULL ORDER BY r.id`,
    );
    expect(rows).toEqual([
      { id: 'A', run_id: first.runId, unseen: true },
      { id: 'B', run_id: second.runId, unseen: false },
      { id: 'C', run_id: second.runId, unseen: false },
    ]);
  });

  it('counts a repeated known line as a duplicate, and does not take it for a missing report', async () => {
    const [a, b] = ['A', 'B'].map((id) => `${line(id, 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n`);
    body = `${a}${b}`;
    const first = await sync();
    // Every report, one of them twice: all seen, one duplicate.
    body = `${a}${b}${a}`;
    const second = await sync();
    expect(second.counters).toMatchObject({ recordsLoaded: 3, duplicates: 1, unchanged: 2 });
    // As many known lines as current reports, yet B is missing: B is not marked seen.
    body = `${a}${a}`;
    const third = await sync();
    expect(third.counters).toMatchObject({ recordsLoaded: 2, duplicates: 1, unchanged: 1 });
    const rows = await query(warehouse, 'SELECT id, run_id FROM reports ORDER BY id');
    expect(rows).toEqual([
      { id: 'A', run_id: third.runId },
      { id: 'B', run_id: second.runId },
    ]);
    expect(first.status).toBe('succeeded');
  });

  it('merges known lines whose report changed since they were staged as matching nothing', async () => {
    body = ['A', 'B'].map((id) => `${line(id, 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n`).join('');
    const first = await sync();
    // A resumed run's known lines were checked against the reports of its first start; B has changed
    // since, so its staged hash no longer names a current report.
    const connection = await warehouse.connect();
    try {
      await connection.run(
        `INSERT INTO staging_seen SELECT 'resumed', row_number() OVER (ORDER BY id), line_hash FROM report_rows`,
      );
      await connection.run(`UPDATE report_rows SET line_hash = 42 WHERE id = 'B'`);
      await connection.run(
        `INSERT INTO sync_runs (run_id, job, source, status, started_at) VALUES ('resumed', 'sync-ndjson', 'ndjson', 'running', now())`,
      );
      await connection.run('BEGIN TRANSACTION');
      const now = new Date();
      const run = { runId: 'resumed', source: 'ndjson', now, fullExport: true, sliceRows: 1_000_000 };
      const merged = await mergeStaging(connection, run, await prepareMerge(connection, run));
      const seenAll = await recordSeen(connection, {
        runId: 'resumed',
        now: now.toISOString(),
        seen: merged.unique,
      });
      // What the runner's run log records then (sync/close-run.ts): the `reports` view lifts to it.
      if (seenAll) {
        await connection.run(
          `UPDATE sync_runs SET seen_all_at = $now::TIMESTAMPTZ WHERE run_id = 'resumed'`,
          {
            now: now.toISOString(),
          },
        );
      }
      await connection.run('COMMIT');
      expect(merged).toMatchObject({ staged: 2, unique: 1, duplicates: 1, unchanged: 1 });
    } finally {
      connection.closeSync();
    }
    const rows = await query(warehouse, 'SELECT id, run_id FROM reports ORDER BY id');
    expect(rows).toEqual([
      { id: 'A', run_id: 'resumed' },
      { id: 'B', run_id: first.runId },
    ]);
  });

  it('updates a changed line, and revives a tombstoned report whose line comes back', async () => {
    body = `${line('A', 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n${line('B', 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n`;
    await sync();
    await query(warehouse, `UPDATE report_rows SET removed_at = now() WHERE id = 'B'`);
    body = `${line('A', 'RESOLVED', '2024-01-03T00:00:00.000Z')}\n${line('B', 'SUBMITTED', '2024-01-02T00:00:00.000Z')}\n`;
    const run = await sync();
    expect(run.counters).toMatchObject({ updated: 1, revived: 1, unchanged: 0 });
    const rows = await query(warehouse, 'SELECT id, status, removed_at FROM reports ORDER BY id');
    expect(rows).toEqual([
      { id: 'A', status: 'RESOLVED', removed_at: null },
      { id: 'B', status: 'SUBMITTED', removed_at: null },
    ]);
    // The new line of A is known from now on.
    const again = await sync();
    expect(again.counters).toMatchObject({ unchanged: 2, updated: 0, revived: 0 });
  });

  it('keeps the latest updatedAt among a known line and a new line of the same id', async () => {
    const newer = line('A', 'RESOLVED', '2024-01-05T00:00:00.000Z');
    const older = line('A', 'IN_PROGRESS', '2024-01-03T00:00:00.000Z');
    body = `${newer}\n`;
    await sync();
    // The known (newer) line comes first, an older version of A after it: the known one still wins.
    body = `${newer}\n${older}\n`;
    const run = await sync();
    expect(run.counters).toMatchObject({ recordsLoaded: 2, duplicates: 1, unchanged: 1, updated: 0 });
    const [row] = await query(warehouse, `SELECT status FROM reports WHERE id = 'A'`);
    expect(row?.status).toBe('RESOLVED');
    // And the other way round: a newer line beats the known one.
    const newest = line('A', 'REJECTED', '2024-01-09T00:00:00.000Z');
    body = `${newest}\n${newer}\n`;
    const run2 = await sync();
    expect(run2.counters).toMatchObject({ duplicates: 1, updated: 1 });
    const [row2] = await query(warehouse, `SELECT status FROM reports WHERE id = 'A'`);
    expect(row2?.status).toBe('REJECTED');
  });
});

describe('re-sync with known CSV rows', () => {
  it('skips rows a current report came from, and never matches NDJSON lines', async () => {
    const tmp = tempDir();
    const sim = await startSimulator({ dataset: await loadDataset(sampleDatasetPath()) });
    try {
      const path = join(tmp.dir, 'w.duckdb');
      // Unconditional: the second CSV run must read the export again, not get a 304.
      const config = testConfig(sim.url, path, {
        csvPageSize: 1000,
        maxRejectRatio: 1,
        conditionalExports: false,
      });
      const w = await openTestWarehouse(config);
      try {
        const [nd] = await syncTargetOnce(w, config, 'ndjson');
        expect(nd?.status).toBe('succeeded');
        // After an NDJSON run, CSV rows are not "known" (other source, other key): all parsed, all unchanged.
        await query(
          w,
          `UPDATE report_rows SET content_hash = 'tampered', csv_hash = 'tampered' WHERE id = (SELECT min(id) FROM report_rows)`,
        );
        const [first] = await syncTargetOnce(w, config, 'csv');
        expect(first?.counters).toMatchObject({ updated: 1, inserted: 0 });
        // Now every row is known from its CSV text: a tampered hash is no longer looked at.
        await query(
          w,
          `UPDATE report_rows SET content_hash = 'tampered', csv_hash = 'tampered' WHERE id = (SELECT min(id) FROM report_rows)`,
        );
        const [second] = await syncTargetOnce(w, config, 'csv');
        expect(second?.status).toBe('succeeded');
        expect(second?.counters).toMatchObject({
          updated: 0,
          inserted: 0,
          unchanged: (first?.counters.unchanged ?? 0) + (first?.counters.updated ?? 0),
        });
        const [row] = await query(
          w,
          `SELECT content_hash FROM reports WHERE id = (SELECT min(id) FROM reports)`,
        );
        expect(row?.content_hash).toBe('tampered');
      } finally {
        w.close();
      }
    } finally {
      await sim.close();
      tmp.cleanup();
    }
  });
});
