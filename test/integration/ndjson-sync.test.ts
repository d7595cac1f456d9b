import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { startRawServer, type RawServer } from '../helpers/raw-server.js';
import { startSimulator, type SimulatorHandle } from '../../src/simulator/server.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { sampleDatasetPath } from '../../src/util/package-root.js';
import type { Warehouse } from '../../src/warehouse/database.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

const sampleLines = readFileSync(sampleDatasetPath(), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '');

describe('NDJSON sync of the real sample', () => {
  let tmp: ReturnType<typeof tempDir>;
  let simulator: SimulatorHandle;
  let warehouse: Warehouse;

  beforeEach(async () => {
    tmp = tempDir();
    simulator = await startSimulator({ dataset: await loadDataset(sampleDatasetPath()), port: 0 });
    warehouse = await openTestWarehouse(testConfig(simulator.url, join(tmp.dir, 'w.duckdb')));
  });
  afterEach(async () => {
    warehouse.close();
    await simulator.close();
    tmp.cleanup();
  });

  it('loads every record or quarantines it with its line and reason', async () => {
    const config = testConfig(simulator.url, warehouse.path);
    const run = await syncOnce(warehouse, config, ndjsonSource);
    expect(run.status).toBe('succeeded');
    const c = run.counters;
    expect(c.recordsRead).toBe(sampleLines.length);
    expect(c.recordsLoaded + c.recordsRejected).toBe(c.recordsRead);
    expect(c.recordsRejected).toBeGreaterThan(0);

    const [reports] = await query(warehouse, 'SELECT count(*) AS n FROM reports');
    expect(reports?.n).toBe(c.recordsLoaded - c.duplicates);

    // Every record the sample marks as a wart is quarantined, with its raw text, line and zod issue paths.
    const rejects = await query(
      warehouse,
      'SELECT line, raw, issues FROM rejected_records WHERE run_id = $run',
      {
        run: run.runId,
      },
    );
    expect(rejects).toHaveLength(c.recordsRejected);
    const warts = sampleLines
      .map((l, i) => ({ line: i + 1, text: l }))
      .filter((l) => l.text.includes('"_wart"'));
    expect(warts.length).toBeGreaterThan(0);
    for (const wart of warts) {
      const reject = rejects.find((r) => r.line === wart.line);
      expect(reject, `line ${wart.line} quarantined`).toBeDefined();
      expect(reject?.raw).toBe(wart.text);
      expect(JSON.parse(String(reject?.issues)).length).toBeGreaterThan(0);
    }

    // Real text survives byte for byte (Köln: umlauts, CRLF inside the description).
    const koeln = sampleLines
      .map((l) => JSON.parse(l))
      .find((r) => typeof r.description === 'string' && r.description.includes('\r\n'));
    expect(koeln).toBeDefined();
    const [row] = await query(warehouse, 'SELECT description FROM reports WHERE id = $id', { id: koeln.id });
    expect(row?.description).toBe(koeln.description);

    const [runRow] = await query(
      warehouse,
      'SELECT status, records_read, records_rejected FROM sync_runs WHERE run_id = $run',
      {
        run: run.runId,
      },
    );
    expect(runRow).toEqual({
      status: 'succeeded',
      records_read: c.recordsRead,
      records_rejected: c.recordsRejected,
    });
  });

  it('is idempotent: a second sync of the same export changes nothing', async () => {
    // The export is read again (not answered 304): what is checked is the re-read path.
    const config = testConfig(simulator.url, warehouse.path, { conditionalExports: false });
    const first = await syncOnce(warehouse, config, ndjsonSource);
    const before = await query(
      warehouse,
      'SELECT (SELECT count(*) FROM reports) r, (SELECT count(*) FROM report_versions) v',
    );
    const second = await syncOnce(warehouse, config, ndjsonSource);
    expect(second.status).toBe('succeeded');
    expect(second.counters).toMatchObject({
      inserted: 0,
      updated: 0,
      revived: 0,
      unchanged: first.counters.inserted,
    });
    const after = await query(
      warehouse,
      'SELECT (SELECT count(*) FROM reports) r, (SELECT count(*) FROM report_versions) v',
    );
    expect(after).toEqual(before);
  });
});

describe('NDJSON sync of small exports', () => {
  let tmp: ReturnType<typeof tempDir>;
  let simulators: SimulatorHandle[] = [];
  let warehouse: Warehouse | undefined;
  let raw: RawServer | undefined;

  beforeEach(() => {
    tmp = tempDir();
    simulators = [];
    raw = undefined;
    warehouse = undefined;
  });
  afterEach(async () => {
    warehouse?.close();
    await raw?.close();
    await Promise.all(simulators.map((s) => s.close()));
    tmp.cleanup();
  });

  async function serve(lines: string[], name: string): Promise<string> {
    const path = join(tmp.dir, name);
    writeFileSync(path, lines.join('\n') + '\n');
    const sim = await startSimulator({ dataset: await loadDataset(path), port: 0 });
    simulators.push(sim);
    return sim.url;
  }

  const record = (id: string, status: string, description = 'Schlagloch vor Hausnummer 3') =>
    JSON.stringify({
      id,
      status,
      destination: 'ROAD_CONTROL',
      category: 'Pothole',
      description,
      location: { lat: 50.9, lng: 6.9 },
      address: 'Hohe Straße 1',
      createdAt: '2016-02-14T10:00:00+01:00',
      updatedAt: status === 'SUBMITTED' ? '2016-02-14T10:00:00+01:00' : '2016-02-15T10:00:00+01:00',
    });

  it('records a changed report as exactly one new version and an updated row', async () => {
    const v1 = [record('A', 'SUBMITTED'), record('B', 'SUBMITTED'), record('C', 'SUBMITTED')];
    const v2 = [record('A', 'SUBMITTED'), record('B', 'IN_PROGRESS'), record('C', 'SUBMITTED')];
    const url1 = await serve(v1, 'v1.ndjson');
    const url2 = await serve(v2, 'v2.ndjson');
    warehouse = await openTestWarehouse(testConfig(url1, join(tmp.dir, 'w.duckdb')));
    await syncOnce(warehouse, testConfig(url1, warehouse.path), ndjsonSource);
    const run = await syncOnce(warehouse, testConfig(url2, warehouse.path), ndjsonSource);
    expect(run.counters).toMatchObject({ inserted: 0, updated: 1, unchanged: 2 });
    const versions = await query(
      warehouse,
      `SELECT status, change, valid_to IS NULL AS current FROM report_versions WHERE id = 'B' ORDER BY valid_from, change DESC`,
    );
    expect(versions).toEqual([
      { status: 'SUBMITTED', change: 'insert', current: false },
      { status: 'IN_PROGRESS', change: 'update', current: true },
    ]);
    const [b] = await query(
      warehouse,
      `SELECT status, first_seen_at < last_changed_at AS moved FROM reports WHERE id = 'B'`,
    );
    expect(b).toEqual({ status: 'IN_PROGRESS', moved: true });
    const [{ n } = {}] = await query(
      warehouse,
      `SELECT count(*) AS n FROM report_versions WHERE id IN ('A', 'C')`,
    );
    expect(n).toBe(2);
  });

  it('handles a BOM, blank lines, CRLF and a malformed line without losing anything', async () => {
    // Exact bytes: the simulator normalises its file, so a raw server plays this export.
    const body =
      '\uFEFF' +
      [record('A', 'SUBMITTED'), '', '{"id": "B", "status": ', '   ', record('C', 'RESOLVED')].join('\r\n') +
      '\r\n';
    raw = await startRawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.end(body);
    });
    const url = raw.url;
    warehouse = await openTestWarehouse(testConfig(url, join(tmp.dir, 'w.duckdb'), { maxRejectRatio: 0.5 }));
    const run = await syncOnce(
      warehouse,
      testConfig(url, warehouse.path, { maxRejectRatio: 0.5 }),
      ndjsonSource,
    );
    expect(run.status).toBe('succeeded');
    expect(run.counters).toMatchObject({ recordsRead: 3, recordsLoaded: 2, recordsRejected: 1 });
    const ids = await query(warehouse, 'SELECT id FROM reports ORDER BY id');
    expect(ids.map((r) => r.id)).toEqual(['A', 'C']);
    const rejects = await query(warehouse, 'SELECT location, raw, issues FROM rejected_records');
    expect(rejects).toHaveLength(1);
    expect(rejects[0]?.location).toBe('line 3');
    expect(rejects[0]?.raw).toBe('{"id": "B", "status": \r');
    expect(String(rejects[0]?.issues)).toContain('malformed JSON');
  });

  it('fails a run past the reject ratio and merges nothing', async () => {
    const url = await serve([record('A', 'SUBMITTED'), '{oops', '{oops'], 'bad.ndjson');
    warehouse = await openTestWarehouse(testConfig(url, join(tmp.dir, 'w.duckdb')));
    const run = await syncOnce(warehouse, testConfig(url, warehouse.path), ndjsonSource);
    expect(run.status).toBe('failed');
    expect(run.error?.code).toBe('REJECT_RATIO');
    expect(await query(warehouse, 'SELECT * FROM reports')).toEqual([]);
    const [runRow] = await query(warehouse, `SELECT status, error->>'code' AS code FROM sync_runs`);
    expect(runRow).toEqual({ status: 'failed', code: 'REJECT_RATIO' });
    expect(await query(warehouse, 'SELECT count(*) AS n FROM rejected_records')).toEqual([{ n: 2 }]);
  });
});
