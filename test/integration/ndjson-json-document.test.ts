import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// "NDJSON endpoint path: not shown", nor its body: a service may answer the NDJSON path with one JSON
// document (an array of reports, or an object wrapping one) instead of one report a line.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const report = (i: number) => ({
  id: `J-${i}`,
  status: 'SUBMITTED',
  destination: 'ROAD_CONTROL',
  description: `line one\nline two ${i}`,
  createdAt: new Date(Date.UTC(2024, 0, 1, 0, i)).toISOString(),
  n: 1.5,
});
const reports = [1, 2, 3].map(report);

/** An upstream answering the export with `body` typed `type`, in chunks of 7 bytes. */
async function upstream(bytes: Buffer, type = 'application/json') {
  const server = await startRawServer((req, res) => {
    if (req.url?.endsWith('/stats')) return void res.end(JSON.stringify({ total: 3 }));
    res.writeHead(200, { 'content-type': type });
    for (let i = 0; i < bytes.length; i += 7) res.write(bytes.subarray(i, i + 7));
    res.end();
  });
  onTestFinished(() => server.close());
  return server;
}

async function sync(body: string, type?: string, maxRecordBytes?: number) {
  return syncBytes(Buffer.from(body), type, maxRecordBytes);
}

async function syncBytes(body: Buffer, type?: string, maxRecordBytes = 8 * 1024 * 1024) {
  const server = await upstream(body, type);
  const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { maxRejectRatio: 0.5, maxRecordBytes });
  const warehouse = await openTestWarehouse(config);
  onTestFinished(() => warehouse.close());
  const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
  return { run, warehouse };
}

describe('an NDJSON export answered as one JSON document', () => {
  it.each([
    ['a JSON array', JSON.stringify(reports)],
    ['a pretty-printed JSON array after a BOM', `\uFEFF${JSON.stringify(reports, null, 2)}\n`],
    ['an object wrapping the array', JSON.stringify({ meta: { total: 3 }, data: reports })],
    ['a pretty-printed wrapping object', JSON.stringify({ data: reports, next: null }, null, 2)],
  ])('%s: its reports are loaded as sent, the export complete', async (_, body) => {
    const { run, warehouse } = await sync(body);
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect([run?.counters.recordsRead, run?.counters.recordsRejected]).toEqual([3, 0]);
    const rows = await query(
      warehouse,
      `SELECT id, description, extra::VARCHAR AS extra FROM reports ORDER BY id`,
    );
    expect(rows).toEqual(reports.map((r) => ({ id: r.id, description: r.description, extra: '{"n":1.5}' })));
    const [tomb] = await query(warehouse, `SELECT tombstones_note FROM sync_runs`);
    expect(String(tomb?.tombstones_note)).toMatch(/^complete export of 3 reports/);
  });

  it('an invalid element is quarantined by its number, the others load', async () => {
    const body = JSON.stringify([reports[0], { ...reports[1], status: '' }, reports[2]]);
    const { run, warehouse } = await sync(body);
    expect(run?.status, run?.error?.message).toBe('succeeded');
    const rejected = await query(warehouse, `SELECT line, record_id FROM rejected_records`);
    expect(rejected).toEqual([{ line: 2, record_id: 'J-2' }]);
  });

  it('NDJSON lines typed as plain JSON, and a one-report export on one line, stay lines', async () => {
    const lines = reports.map((r) => JSON.stringify(r)).join('\n');
    const { run } = await sync(`${lines}\n`);
    expect([run?.status, run?.counters.recordsRead]).toEqual(['succeeded', 3]);
    tmp.cleanup();
    tmp = tempDir();
    const one = await sync(JSON.stringify(reports[0]), 'application/json; charset=utf-8');
    expect([one.run?.status, one.run?.counters.recordsRead]).toEqual(['succeeded', 1]);
  });

  it('bytes that are not UTF-8 are never loaded as U+FFFD: a lone line is quarantined, a document refused', async () => {
    // `é` as the Latin-1 byte 0xE9.
    const line = Buffer.from(`${JSON.stringify({ ...reports[0], description: 'caf\u00e9' })}\n`, 'latin1');
    const one = await syncBytes(line);
    expect(await query(one.warehouse, `SELECT id FROM reports`)).toEqual([]);
    expect(await query(one.warehouse, `SELECT line, record_id, raw_encoding FROM rejected_records`)).toEqual([
      { line: 1, record_id: 'J-1', raw_encoding: 'base64' },
    ]);
    tmp.cleanup();
    tmp = tempDir();
    const doc = [reports[0], { ...reports[1], description: 'caf\u00e9' }, reports[2]];
    for (const body of [JSON.stringify(doc), JSON.stringify({ data: doc }), JSON.stringify(doc, null, 2)]) {
      const { run, warehouse } = await syncBytes(Buffer.from(body, 'latin1'));
      expect([run?.status, run?.error?.code]).toEqual(['failed', 'NDJSON_DOCUMENT_INVALID']);
      expect(run?.error?.message).toMatch(/not valid UTF-8/);
      expect(await query(warehouse, `SELECT id FROM reports`)).toEqual([]);
      tmp.cleanup();
      tmp = tempDir();
    }
  });

  it('a wrapping object whose first line opens its array (`{"data": [`) is one document', async () => {
    const items = reports.map((r) => `  ${JSON.stringify(r)}`).join(',\n');
    const { run, warehouse } = await sync(`{"data": [\n${items}\n]}\n`);
    expect(run?.status, run?.error?.message).toBe('succeeded');
    expect([run?.counters.recordsRead, run?.counters.recordsRejected]).toEqual([3, 0]);
    expect(await query(warehouse, `SELECT id FROM reports ORDER BY id`)).toEqual(
      reports.map((r) => ({ id: r.id })),
    );
  });

  it('NDJSON typed as plain JSON stays streamed lines: a first line that is broken, or longer than REPORTS_MAX_RECORD_BYTES, is quarantined and the rest load', async () => {
    const rest = reports.slice(1).map((r) => JSON.stringify(r));
    const long = JSON.stringify({ ...reports[0], description: 'x'.repeat(4096) });
    for (const first of ['{"id":"J-1","status":', long]) {
      const { run, warehouse } = await sync(`${[first, ...rest].join('\n')}\n`, 'application/json', 1024);
      expect(run?.status, run?.error?.message).toBe('succeeded');
      expect(await query(warehouse, `SELECT id FROM reports ORDER BY id`)).toEqual([
        { id: 'J-2' },
        { id: 'J-3' },
      ]);
      expect(await query(warehouse, `SELECT line, record_id FROM rejected_records`)).toEqual([
        { line: 1, record_id: 'J-1' },
      ]);
      tmp.cleanup();
      tmp = tempDir();
    }
  });

  it('a pretty-printed object holding no array of reports fails with NDJSON_DOCUMENT_INVALID naming REPORTS_NDJSON_PATH', async () => {
    const { run } = await sync(JSON.stringify({ data: 'none', error: 'x' }, null, 2));
    expect(run?.status).toBe('failed');
    expect(run?.error?.code).toBe('NDJSON_DOCUMENT_INVALID');
    expect(run?.error?.message).toMatch(/REPORTS_NDJSON_PATH/);
  });
});
