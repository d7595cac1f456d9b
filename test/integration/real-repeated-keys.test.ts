import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import type { SyncTarget } from '../../src/sync/sync-sources.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// San Francisco's Open311 capture (test/fixtures/real/SOURCE.md) gives `updated_datetime` and
// `expected_datetime` twice in every request: the first copy a time (or "null"), the second a flag. Read
// with REPORTS_FIELD_NAMES, `updated_datetime` is a field in another name; the repeated key must still
// quarantine the request, as it does for a record in the wire names, never load one of the two copies.

const CAPTURE = readFileSync(
  join(import.meta.dirname, '../fixtures/real/sf_open311_requests_2010-11.json'),
  'utf8',
);
/** Each request's object text as sent, on one line (only the white space between tokens is changed). */
const REQUESTS = [...CAPTURE.matchAll(/\n {4}\{([\s\S]*?)\n {4}\}/g)].map(
  (m) => `{${(m[1] ?? '').replace(/\s*\n\s*/g, ' ').trim()}}`,
);
const FIELD_NAMES =
  'id=service_request_id,createdAt=requested_datetime,updatedAt=updated_datetime,destination=service_name,lng=lon';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

async function upstream() {
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: REQUESTS.length }));
    if (url.pathname.endsWith('.ndjson')) return void res.end(`${REQUESTS.join('\n')}\n`);
    res.end(url.searchParams.get('page') === '1' ? CAPTURE : '[]');
  });
  onTestFinished(() => server.close());
  return server;
}

describe("San Francisco's repeated keys read through REPORTS_FIELD_NAMES", () => {
  it('holds 1,001 requests, each giving updated_datetime twice', () => {
    expect(REQUESTS).toHaveLength(1001);
    for (const r of REQUESTS) expect(r.match(/"updated_datetime"/g)).toHaveLength(2);
  });

  it.each<SyncTarget>(['ndjson', 'recent'])('%s: quarantines every request, loads none', async (target) => {
    const server = await upstream();
    const config = testConfig(server.url, join(tmp.dir, 'w.duckdb'), {
      fieldNames: FIELD_NAMES,
      sourceTimeZone: 'America/Los_Angeles',
      maxRejectRatio: 1,
    });
    const warehouse = await openTestWarehouse(config);
    onTestFinished(() => warehouse.close());
    const [run] = await syncTargetOnce(warehouse, config, target);
    expect(run?.counters).toMatchObject({ recordsRead: 1001, recordsLoaded: 0, recordsRejected: 1001 });
    expect(await query(warehouse, 'SELECT count(*)::INT AS n FROM reports')).toEqual([{ n: 0 }]);
    const reasons = await query(
      warehouse,
      `SELECT i.path, i.message, count(*)::INT AS n
       FROM rejected_records, unnest(from_json(issues, '[{"path":"VARCHAR","message":"VARCHAR"}]')) AS t(i)
       GROUP BY ALL ORDER BY n DESC`,
    );
    expect(reasons).toEqual([
      {
        path: 'updated_datetime',
        message: 'duplicate key "updated_datetime": the object gives it twice',
        n: 1001,
      },
    ]);
    // What is kept for the analyst is the request as sent: both copies, in the upstream's names.
    const [raw] = await query(warehouse, `SELECT raw FROM rejected_records WHERE record_id = '771970'`);
    expect(String(raw?.raw)).toContain('"updated_datetime" : "true"');
  });
});
