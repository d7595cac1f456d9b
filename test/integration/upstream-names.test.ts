import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// Real services name the report fields their own way (Open311: `service_request_id`, `requested_datetime`;
// Socrata: `unique_key`, `created_date`) and Socrata writes local times without an offset. Two settings read
// them: REPORTS_FIELD_NAMES and REPORTS_SOURCE_TIME_ZONE. Records shaped as in the Köln Open311 and NYC 311
// captures (data/sample/sources).

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const OPEN311 = [
  {
    service_request_id: 'A-1627',
    status: 'open',
    service_code: '017',
    service_name: 'Ampel defekt',
    requested_datetime: '2016-02-16T21:26:17+01:00',
    updated_datetime: '2016-02-16T21:26:17+01:00',
    address: 'Schillerstr. 1, 50858 Köln - Weiden',
    lat: 50.9384079215,
    long: 6.83454483747,
  },
  {
    service_request_id: 'A-1626',
    status: 'closed',
    service_code: '013',
    service_name: 'Straßenlaterne defekt',
    requested_datetime: '2016-02-16T21:11:08+01:00',
    updated_datetime: '2016-02-18T09:00:00+01:00',
    address: null,
    lat: 50.9360132346,
    long: 6.95959884903,
  },
];
const SOCRATA_CSV = [
  '"unique_key","created_date","agency","status","latitude","longitude"',
  '"60879417","2024-04-16T03:03:15.000","DOT","Open","40.67679280229251","-73.7379342313789"',
  '"60879418","2024-01-16T23:30:00.000","NYPD","Closed","40.7","-73.9"',
].join('\r\n');

async function upstream() {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: 2 }));
    if (url.pathname.endsWith('.ndjson'))
      return void res.end(`${OPEN311.map((r) => JSON.stringify(r)).join('\n')}\n`);
    res.writeHead(200, { 'content-type': 'text/csv' });
    res.end(
      url.searchParams.get('page') === '1' ? `${SOCRATA_CSV}\r\n` : `${SOCRATA_CSV.split('\r\n')[0]}\r\n`,
    );
  });
  onTestFinished(() => server.close());
  return server;
}

describe("the upstream's own field names and time zone", () => {
  it('REPORTS_FIELD_NAMES reads Open311 requests as reports; without it each is quarantined', async () => {
    const server = await upstream();
    const file = join(tmp.dir, 'w.duckdb');
    const plain = testConfig(server.url, file, { maxRejectRatio: 1 });
    const warehouse = await openTestWarehouse(plain);
    onTestFinished(() => warehouse.close());
    const [unmapped] = await syncTargetOnce(warehouse, plain, 'ndjson');
    expect(unmapped?.counters).toMatchObject({ recordsRejected: 2, inserted: 0 });
    const issues = await query(
      warehouse,
      `SELECT DISTINCT i->>'path' AS path, i->>'code' AS code, i->>'message' AS message
       FROM rejected_records, unnest(json_extract(issues, '$[*]')) AS t(i) ORDER BY path`,
    );
    // Each field the records carry under another name is said to be missing, with the setting that maps it.
    expect(issues.map((i) => [i.path, i.code])).toEqual([
      ['createdAt', 'missing_field'],
      ['destination', 'missing_field'],
      ['id', 'missing_field'],
    ]);
    expect(String(issues[2]?.message)).toContain('REPORTS_FIELD_NAMES maps it: id=<its name>');

    const mapped = testConfig(server.url, file, {
      fieldNames:
        'id=service_request_id, createdAt=requested_datetime,updatedAt=updated_datetime,destination=service_name,lng=long',
      conditionalExports: false,
    });
    const [run] = await syncTargetOnce(warehouse, mapped, 'ndjson');
    expect(run?.counters).toMatchObject({ recordsRejected: 0, inserted: 2 });
    const rows = await query(
      warehouse,
      `SELECT id, status, destination, lat, lng, strftime(created_at, '%Y-%m-%dT%H:%M:%SZ') AS created, address, extra::VARCHAR AS extra
       FROM reports ORDER BY id`,
    );
    expect(rows).toEqual([
      {
        id: 'A-1626',
        status: 'closed',
        destination: 'Straßenlaterne defekt',
        lat: 50.9360132346,
        lng: 6.95959884903,
        created: '2016-02-16T20:11:08Z',
        address: null,
        extra: '{"service_code":"013"}',
      },
      {
        id: 'A-1627',
        status: 'open',
        destination: 'Ampel defekt',
        lat: 50.9384079215,
        lng: 6.83454483747,
        created: '2016-02-16T20:26:17Z',
        address: 'Schillerstr. 1, 50858 Köln - Weiden',
        extra: '{"service_code":"017"}',
      },
    ]);
    const [again] = await syncTargetOnce(warehouse, mapped, 'ndjson');
    expect(again?.counters).toMatchObject({ unchanged: 2, updated: 0 });
  });

  it('REPORTS_SOURCE_TIME_ZONE reads Socrata local times in their zone; without it the reason names the setting', async () => {
    const server = await upstream();
    const file = join(tmp.dir, 'w.duckdb');
    const names = 'id=unique_key,createdAt=created_date,destination=agency';
    const zoneless = testConfig(server.url, file, { fieldNames: names, maxRejectRatio: 1 });
    const warehouse = await openTestWarehouse(zoneless);
    onTestFinished(() => warehouse.close());
    const [unzoned] = await syncTargetOnce(warehouse, zoneless, 'csv');
    expect(unzoned?.counters.recordsRejected).toBe(2);
    const [reject] = await query(warehouse, `SELECT issues::VARCHAR AS issues FROM rejected_records LIMIT 1`);
    expect(String(reject?.issues)).toContain('REPORTS_SOURCE_TIME_ZONE');

    const zoned = testConfig(server.url, file, {
      fieldNames: names,
      sourceTimeZone: 'America/New_York',
      conditionalExports: false,
    });
    const [run] = await syncTargetOnce(warehouse, zoned, 'csv');
    expect(run?.counters).toMatchObject({ recordsRejected: 0, inserted: 2 });
    const rows = await query(
      warehouse,
      `SELECT id, strftime(created_at, '%Y-%m-%dT%H:%M:%SZ') AS created FROM reports ORDER BY id`,
    );
    expect(rows).toEqual([
      { id: '60879417', created: '2024-04-16T07:03:15Z' }, // EDT, UTC-4
      { id: '60879418', created: '2024-01-17T04:30:00Z' }, // EST, UTC-5, the next day in UTC
    ]);
  });

  it('a changed setting reads every line again, unchanged ones too', async () => {
    const line = JSON.stringify({
      id: 'T-1',
      status: 'open',
      destination: 'DOT',
      createdAt: '2024-03-01T10:00:00',
      details: 'pothole',
    });
    const server = await startRawServer((req, res) => {
      if ((req.url ?? '').endsWith('/stats')) return void res.end(JSON.stringify({ total: 1 }));
      res.end(`${line}\n`);
    });
    onTestFinished(() => server.close());
    const file = join(tmp.dir, 'w.duckdb');
    const first = testConfig(server.url, file, {
      sourceTimeZone: 'America/New_York',
      conditionalExports: false,
    });
    const warehouse = await openTestWarehouse(first);
    onTestFinished(() => warehouse.close());
    const read = async (overrides: Parameters<typeof testConfig>[2]) => {
      const [run] = await syncTargetOnce(
        warehouse,
        testConfig(server.url, file, { conditionalExports: false, ...overrides }),
        'ndjson',
      );
      expect(run?.status, run?.error?.message).toBe('succeeded');
      const [row] = await query(
        warehouse,
        `SELECT strftime(created_at, '%H:%MZ') AS created, description, extra::VARCHAR AS extra FROM reports`,
      );
      return row;
    };
    expect(await read({ sourceTimeZone: 'America/New_York' })).toEqual({
      created: '15:00Z',
      description: null,
      extra: '{"details":"pothole"}',
    });
    expect(await read({ sourceTimeZone: 'Europe/Berlin', fieldNames: 'description=details' })).toEqual({
      created: '09:00Z',
      description: 'pothole',
      extra: null,
    });
  });
});
