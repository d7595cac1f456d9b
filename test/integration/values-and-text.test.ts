import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { csvSource } from '../../src/sync/sources/csv-source.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import type { ExportSource } from '../../src/sync/export-source.js';
import type { ConfigOverrides } from '../../src/config/config.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

// Values and text (docs/guarantees.md): one bad value never fails a run, text is stored byte for byte or
// quarantined with its bytes and a reason. Each upstream here is a small server sending exact bytes; each
// sync runs the real pipeline into a real DuckDB file, on the main thread and in decode workers.

const NDJSON_PATH = '/api/v1/public/reports.ndjson';
const CSV_PATH = '/api/v1/public/reports.csv';
const T = '2024-05-01T10:00:00.000Z';

const line = (fields: Record<string, unknown>) =>
  JSON.stringify({ status: 'SUBMITTED', destination: 'ROAD_CONTROL', createdAt: T, ...fields });

/** Serves `ndjson` (bytes) as the NDJSON export and `csv` as its only CSV page, with the given content types. */
async function upstream(parts: {
  ndjson?: Buffer;
  csv?: Buffer;
  ndjsonType?: string;
  csvType?: string;
  /** Bodies end by closing the connection (no length, not chunked): a cut cannot be told from the end. */
  closeDelimited?: boolean;
}) {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === NDJSON_PATH && parts.ndjson && parts.closeDelimited) {
      const head = `HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n\r\n`;
      res.socket?.end(Buffer.concat([Buffer.from(head), parts.ndjson]));
    } else if (url.pathname === NDJSON_PATH && parts.ndjson) {
      res.writeHead(200, { 'content-type': parts.ndjsonType ?? 'application/x-ndjson' });
      res.end(parts.ndjson);
    } else if (url.pathname === CSV_PATH && parts.csv) {
      res.writeHead(200, { 'content-type': parts.csvType ?? 'text/csv; charset=utf-8' });
      res.end(
        url.searchParams.get('page') === '1' ? parts.csv : parts.csv.subarray(0, parts.csv.indexOf('\n') + 1),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  onTestFinished(() => server.close());
  return server;
}

async function sync(url: string, source: ExportSource, overrides: ConfigOverrides = {}) {
  const tmp = tempDir('reports-sync-values-');
  onTestFinished(() => tmp.cleanup());
  const config = testConfig(url, join(tmp.dir, 'w.duckdb'), { maxRejectRatio: 1, retries: 0, ...overrides });
  const warehouse = await openTestWarehouse(config);
  onTestFinished(() => warehouse.close());
  const run = async () => {
    const summary = await syncOnce(warehouse, config, source);
    const [row] = await query(
      warehouse,
      `SELECT status, records_read, records_loaded, records_rejected, error,
         (SELECT count(*) FROM rejected_records j WHERE j.run_id = r.run_id) AS stored_rejects
       FROM sync_runs r WHERE run_id = $run`,
      { run: summary.runId },
    );
    return { summary, row: row! };
  };
  return { warehouse, run };
}

afterEach(() => {
  delete process.env.REPORTS_FAILPOINT;
});

const BAD_UTF8: Array<[string, number[]]> = [
  ['ff', [0xff]],
  ['overlong', [0xc0, 0xaf]],
  ['surrogate', [0xed, 0xa0, 0x80]],
  ['truncated', [0xe2, 0x82]],
];

function ndjsonBody(): Buffer {
  let deep = '1';
  for (let i = 0; i < 100_000; i++) deep = `[${deep}]`;
  const parts: Buffer[] = [
    Buffer.from(`${line({ id: 'ok-1', category: '', description: 'Straße ✓ 😀', address: '' })}\n`),
    Buffer.from(`${line({ id: 'y10000', createdAt: '9999-12-31T23:59:59-01:00' })}\n`),
    Buffer.from(`${line({ id: 'y0', createdAt: '0000-06-01T00:00:00Z' })}\n`),
    Buffer.from('{"id":"lone-\\ud800","status":"S","destination":"D","createdAt":"' + T + '"}\n'),
    Buffer.from('{"id":"lone-\\udbff","status":"S","destination":"D","createdAt":"' + T + '"}\n'),
    Buffer.from(`${line({ id: 'deep' }).slice(0, -1)},"nested":${deep}}\n`),
    Buffer.from(`${line({ id: 'wide', many: Array.from({ length: 2000 }, (_, i) => i) })}\n`),
  ];
  for (const [name, bytes] of BAD_UTF8) {
    const [before, after] = line({ id: `utf8-${name}`, description: 'ab@cd' }).split('@');
    parts.push(Buffer.concat([Buffer.from(before!), Buffer.from(bytes), Buffer.from(`${after}\n`)]));
  }
  parts.push(Buffer.from(`${line({ id: 'ok-2', category: null })}\n`));
  return Buffer.concat(parts);
}

describe('values and text: NDJSON', () => {
  for (const workers of [0, 2]) {
    it(`quarantines what the warehouse cannot hold and keeps the rest byte for byte (${workers} decode workers)`, async () => {
      const server = await upstream({ ndjson: ndjsonBody() });
      const { warehouse, run } = await sync(server.url, ndjsonSource, { decodeWorkers: workers });
      for (let attempt = 0; attempt < 2; attempt++) {
        // The same bad values on the next run fail it neither.
        const { summary, row } = await run();
        expect(summary.status, JSON.stringify(summary.error)).toBe('succeeded');
        expect(row).toMatchObject({
          records_read: 12,
          records_loaded: 2,
          records_rejected: 10,
          stored_rejects: 10,
        });
      }
      const reports = await query(
        warehouse,
        `SELECT id, category, description, address, hex(encode(description)) AS hex FROM reports ORDER BY id`,
      );
      expect(reports).toEqual([
        {
          id: 'ok-1',
          category: '',
          description: 'Straße ✓ 😀',
          address: '',
          hex: Buffer.from('Straße ✓ 😀').toString('hex').toUpperCase(),
        },
        { id: 'ok-2', category: null, description: null, address: null, hex: null },
      ]);
      const rejects = await query(
        warehouse,
        `SELECT location, record_id, raw, raw_encoding, issues::VARCHAR AS issues FROM rejected_records
         WHERE run_id = (SELECT max(run_id) FROM rejected_records) ORDER BY line`,
      );
      const reasons = Object.fromEntries(rejects.map((r) => [r.record_id ?? r.location, String(r.issues)]));
      expect(reasons.y10000).toMatch(/outside the storable range/);
      expect(reasons.y0).toMatch(/outside the storable range/);
      expect(reasons['line 4']).toMatch(/lone UTF-16 surrogate|non-blank string/);
      expect(reasons['line 5']).toMatch(/lone UTF-16 surrogate|non-blank string/);
      expect(reasons.deep).toMatch(/deeper than 64 levels/);
      expect(reasons.wide).toMatch(/more than 1000 keys/);
      const body = ndjsonBody();
      for (const r of rejects.filter((x) => x.raw_encoding === 'base64')) {
        const bytes = Buffer.from(String(r.raw), 'base64');
        expect(body.includes(Buffer.concat([bytes, Buffer.from('\n')]))).toBe(true);
        expect(String(r.issues)).toMatch(/invalid UTF-8 at byte \d+/);
      }
      expect(rejects.filter((x) => x.raw_encoding === 'base64')).toHaveLength(BAD_UTF8.length);
      // The id of a line whose other bytes are not UTF-8 is readable, so the analyst learns which report it is.
      expect(rejects.filter((x) => x.raw_encoding === 'base64').map((x) => x.record_id)).toEqual(
        BAD_UTF8.map(([name]) => `utf8-${name}`),
      );
      // The ids differing only in a lone surrogate were not merged into one report.
      expect(await query(warehouse, `SELECT id FROM reports WHERE id LIKE 'lone-%'`)).toEqual([]);
    });
  }

  it('honours a declared charset and refuses one it cannot decode', async () => {
    const latin1 = Buffer.from(`${line({ id: 'k-1', description: 'Köln Straße' })}\n`, 'latin1');
    const ok = await upstream({ ndjson: latin1, ndjsonType: 'application/x-ndjson; charset=ISO-8859-1' });
    const a = await sync(ok.url, ndjsonSource);
    expect((await a.run()).summary.status).toBe('succeeded');
    expect(await query(a.warehouse, `SELECT description FROM reports`)).toEqual([
      { description: 'Köln Straße' },
    ]);

    const unknown = await upstream({ ndjson: latin1, ndjsonType: 'application/x-ndjson; charset=x-klingon' });
    const b = await sync(unknown.url, ndjsonSource);
    const { summary } = await b.run();
    expect(summary.status).toBe('failed');
    expect(summary.error?.code).toBe('UNSUPPORTED_CHARSET');
  });

  it('bisects a batch DuckDB refuses down to its bad rows, quarantines them and goes on', async () => {
    process.env.REPORTS_FAILPOINT = 'stage-refuse';
    const ids = ['a', 'refuse-1', 'b', 'c', 'refuse-2', 'd', 'e'];
    const server = await upstream({ ndjson: Buffer.from(ids.map((id) => `${line({ id })}\n`).join('')) });
    const { warehouse, run } = await sync(server.url, ndjsonSource, { decodeWorkers: 0 });
    const { summary, row } = await run();
    expect(summary.status, JSON.stringify(summary.error)).toBe('succeeded');
    expect(row).toMatchObject({ records_read: 7, records_loaded: 5, records_rejected: 2, stored_rejects: 2 });
    expect(await query(warehouse, `SELECT id FROM reports ORDER BY id`)).toEqual(
      ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id })),
    );
    const rejects = await query(
      warehouse,
      `SELECT record_id, location, issues::VARCHAR AS issues FROM rejected_records ORDER BY line`,
    );
    expect(rejects.map((r) => [r.record_id, r.location])).toEqual([
      ['refuse-1', 'line 2'],
      ['refuse-2', 'line 5'],
    ]);
    expect(String(rejects[0]?.issues)).toMatch(/the warehouse refused the record: .*Conversion Error/);
  });

  it('a failed run stores every reject it counted', async () => {
    // Rejects staged in a batch never committed: the body is cut mid-line, the run fails (no retries).
    const body = `${line({ id: 'x', createdAt: 'nope' })}\n{not json\n${line({ id: 'ok' })}\n{"id":"cut`;
    const server = await upstream({ ndjson: Buffer.from(body), closeDelimited: true });
    const { run } = await sync(server.url, ndjsonSource);
    const { summary, row } = await run();
    expect(summary.status).toBe('failed');
    expect(summary.error?.code).toBe('BODY_TRUNCATED');
    expect(row.records_rejected).toBe(2);
    expect(row.stored_rejects).toBe(2);
  });
});

describe('a last line without a line break in a body whose end the transport checks', () => {
  it('NDJSON, chunked or with a length: a malformed last line is quarantined, the run succeeds', async () => {
    const body = Buffer.from(`${line({ id: 'a' })}\n${line({ id: 'b' })}\n{"id":"c", "status": SUBMITTED}`);
    for (const server of [
      await upstream({ ndjson: body }), // chunked
      await startRawServer((req, res) => {
        if (!req.url?.endsWith('.ndjson')) return void res.writeHead(404).end();
        res
          .writeHead(200, { 'content-type': 'application/x-ndjson', 'content-length': body.length })
          .end(body);
      }),
    ]) {
      onTestFinished(() => server.close());
      const { run, warehouse } = await sync(server.url, ndjsonSource);
      const { summary } = await run();
      expect([summary.status, summary.counters.recordsLoaded, summary.counters.recordsRejected]).toEqual([
        'succeeded',
        2,
        1,
      ]);
      const [reject] = await query(warehouse, `SELECT location, raw FROM rejected_records`);
      expect(reject).toEqual({ location: 'line 3', raw: '{"id":"c", "status": SUBMITTED}' });
    }
  });
});

describe('values and text: CSV', () => {
  const header = 'id,status,destination,category,description,lat,lng,address,createdAt,updatedAt\r\n';

  for (const workers of [0, 2]) {
    it(`reads "" as the empty string and an empty cell as NULL, quarantines bad bytes and values (${workers} workers)`, async () => {
      const csv = Buffer.concat([
        Buffer.from(header),
        Buffer.from(`e-1,S,D,"",,,,"",${T},${T}\r\n`),
        Buffer.from(`y-1,S,D,,,,,,9999-12-31T23:59:59-01:00,${T}\r\n`),
        Buffer.from('u-1,S,D,ab'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(`,,,,,${T},${T}\r\n`),
        Buffer.from(`ok,S,D,Straße,"a ""quoted"" text",50.5,6.5,x,${T},${T}\r\n`),
      ]);
      const server = await upstream({ csv });
      const { warehouse, run } = await sync(server.url, csvSource, { decodeWorkers: workers });
      const { summary, row } = await run();
      expect(summary.status, JSON.stringify(summary.error)).toBe('succeeded');
      expect(row).toMatchObject({
        records_read: 4,
        records_loaded: 2,
        records_rejected: 2,
        stored_rejects: 2,
      });
      expect(
        await query(warehouse, `SELECT id, category, description, address FROM reports ORDER BY id`),
      ).toEqual([
        { id: 'e-1', category: '', description: null, address: '' },
        { id: 'ok', category: 'Straße', description: 'a "quoted" text', address: 'x' },
      ]);
      const rejects = await query(
        warehouse,
        `SELECT location, record_id, raw, raw_encoding, issues::VARCHAR AS issues FROM rejected_records ORDER BY line`,
      );
      expect(rejects[0]?.issues).toMatch(/outside the storable range/);
      expect(rejects[1]).toMatchObject({
        location: 'page 1, row 3, line 4',
        raw_encoding: 'base64',
        record_id: 'u-1',
      });
      expect(
        Buffer.from(String(rejects[1]?.raw), 'base64').includes(Buffer.from([0x62, 0xff, 0xfe, 0x2c])),
      ).toBe(true);
      expect(rejects[1]?.issues).toMatch(/invalid UTF-8 at byte 10/);
    });
  }

  it('decodes a page declared ISO-8859-1 as such, and refuses an unknown charset', async () => {
    const page = Buffer.from(`${header}k-1,S,D,Bäume,Köln Straße,,,Düsseldorf,${T},${T}\r\n`, 'latin1');
    const ok = await upstream({ csv: page, csvType: 'text/csv; charset=iso-8859-1' });
    const a = await sync(ok.url, csvSource);
    expect((await a.run()).summary.status).toBe('succeeded');
    expect(await query(a.warehouse, `SELECT category, description, address FROM reports`)).toEqual([
      { category: 'Bäume', description: 'Köln Straße', address: 'Düsseldorf' },
    ]);
    const bad = await upstream({ csv: page, csvType: 'text/csv; charset=x-unknown' });
    const b = await sync(bad.url, csvSource);
    const { summary } = await b.run();
    expect(summary.status).toBe('failed');
    expect(summary.error?.code).toBe('UNSUPPORTED_CHARSET');
  });
});
