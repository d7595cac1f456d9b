import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// Local times as real services write them, read with REPORTS_SOURCE_TIME_ZONE: NYC 311's portal CSV download
// (US 12-hour times, test/fixtures/real/SOURCE.md) and SF311's Open311 capture, whose one broken request has
// every field "null" and `requested_datetime` ":27.7".

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const PORTAL_CSV = readFileSync(join(import.meta.dirname, '../fixtures/real/nyc311-portal.csv'), 'utf8');

const SF = [
  {
    id: '771970',
    status: 'Open',
    destination: 'SF311',
    location: { lat: 37.774456, lng: -122.4134 },
    createdAt: '2010-11-15 01:05:25.727',
  },
  { id: 'null', status: 'null', destination: 'SF311', createdAt: ':27.7', updatedAt: 'null' },
  {
    id: '771969',
    status: 'Open',
    destination: 'SF311',
    createdAt: '2010-11-15 01:00:36.113',
    updatedAt: '2010-11-18 01:00:35.0',
  },
];

async function upstream(total: number) {
  const header = PORTAL_CSV.split('\n')[0];
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total }));
    if (url.pathname.endsWith('.ndjson'))
      return void res.end(`${SF.map((r) => JSON.stringify(r)).join('\n')}\n`);
    res.writeHead(200, { 'content-type': 'text/csv' });
    res.end(url.searchParams.get('page') === '1' ? PORTAL_CSV : `${header}\n`);
  });
  onTestFinished(() => server.close());
  return server;
}

describe('real local times with REPORTS_SOURCE_TIME_ZONE', () => {
  it("loads every row of NYC 311's portal CSV, its US 12-hour times read in New York time", async () => {
    const server = await upstream(5);
    const file = join(tmp.dir, 'w.duckdb');
    const config = testConfig(server.url, file, {
      fieldNames:
        'id=Unique Key,createdAt=Created Date,updatedAt=Resolution Action Updated Date,destination=Agency',
      sourceTimeZone: 'America/New_York',
    });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'csv');
    expect(run?.counters).toMatchObject({ recordsRead: 5, recordsRejected: 0, inserted: 5 });
    const rows = await query(
      warehouse,
      `SELECT id, strftime(created_at, '%Y-%m-%dT%H:%M:%SZ') AS created,
              strftime(updated_at, '%Y-%m-%dT%H:%M:%SZ') AS updated, lat, lng, extra->>'Closed Date' AS closed
       FROM reports ORDER BY created_at LIMIT 2`,
    );
    expect(rows).toEqual([
      // Never updated: its empty Resolution Action Updated Date reads as its creation.
      {
        id: '54049402',
        created: '2022-05-01T04:00:03Z',
        updated: '2022-05-01T04:00:03Z',
        lat: 40.83065331987539,
        lng: -73.92308231033165,
        closed: null,
      },
      {
        id: '54046813',
        created: '2022-05-01T04:00:09Z',
        updated: '2022-05-01T04:07:53Z',
        lat: 40.81237834836466,
        lng: -73.95240115039357,
        closed: '05/01/2022 12:07:46 AM',
      },
    ]);
  });

  it("quarantines SF311's broken request and loads the rest, instead of failing the run", async () => {
    const server = await upstream(3);
    const file = join(tmp.dir, 'w.duckdb');
    const config = testConfig(server.url, file, {
      sourceTimeZone: 'America/Los_Angeles',
      maxRejectRatio: 0.5,
      retries: 0,
    });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
    expect(run?.status).toBe('succeeded');
    expect(run?.counters).toMatchObject({ recordsRead: 3, recordsRejected: 1, inserted: 2 });
    const issues = await query(
      warehouse,
      `SELECT i->>'path' AS path, i->>'message' AS message
       FROM rejected_records, unnest(json_extract(issues, '$[*]')) AS t(i) ORDER BY path`,
    );
    expect(issues).toEqual([
      { path: 'createdAt', message: 'not an ISO 8601 timestamp with offset' },
      { path: 'updatedAt', message: 'not an ISO 8601 timestamp with offset' },
    ]);
    const rows = await query(
      warehouse,
      `SELECT id, strftime(created_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS created FROM reports ORDER BY id`,
    );
    expect(rows).toEqual([
      { id: '771969', created: '2010-11-15T09:00:36.113Z' },
      { id: '771970', created: '2010-11-15T09:05:25.727Z' },
    ]);
  });
});
