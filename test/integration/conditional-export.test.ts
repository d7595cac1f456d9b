import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const SNAPSHOT = `SELECT id, status, content_hash, removed_at, first_seen_at, last_changed_at FROM reports ORDER BY id`;

const isRedirect = (status: number | undefined) =>
  status !== undefined && status >= 300 && status < 400 && status !== 304;

async function runRow(warehouse: Parameters<typeof query>[0], runId: string) {
  const rows = await query(
    warehouse,
    `SELECT status, complete, not_modified, outcome, export_etag, records_read::INTEGER AS records_read,
            removed::INTEGER AS removed, last_seen_max
     FROM sync_runs, (SELECT max(last_seen_at)::VARCHAR AS last_seen_max FROM reports WHERE removed_at IS NULL)
     WHERE run_id = $run`,
    { run: runId },
  );
  return rows[0];
}

describe('conditional full exports', () => {
  it.each(['ndjson', 'csv'] as const)(
    'a %s run against an unchanged export gets a 304 in one request and records `unchanged`; the warehouse and its tombstones stay as they were',
    async (target) => {
      const sim = await startTestSimulator({ generate: { n: 300, seed: 4 } });
      const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { csvPageSize: 100 });
      const warehouse = await openTestWarehouse(config);
      try {
        const [first] = await syncTargetOnce(warehouse, config, target);
        expect(first?.status).toBe('succeeded');
        sim.advanceDays(1); // a day with an unpublished report: the next export infers a tombstone
        const [second] = await syncTargetOnce(warehouse, config, target);
        expect(second?.counters.removed).toBeGreaterThan(0);
        const etag = second?.exportInfo?.etag;
        expect(etag).toBeDefined();
        const before = await query(warehouse, SNAPSHOT);
        const versions = await query(warehouse, `SELECT count(*)::INTEGER AS n FROM report_versions`);
        const seenBefore = (await runRow(warehouse, second!.runId))?.last_seen_max;

        sim.clearRequests();
        const [third] = await syncTargetOnce(warehouse, config, target);
        expect(third?.status).toBe('succeeded');
        expect(third?.notModified).toBe(true);
        // One request answered (the CSV export's entry point redirects to its pages first).
        const requests = sim.requests().filter((r) => !isRedirect(r.status));
        expect(sim.requests().length - requests.length).toBe(target === 'csv' ? 1 : 0);
        expect(requests).toHaveLength(1);
        expect(requests[0]?.status).toBe(304);
        expect(requests[0]?.headers['if-none-match']).toBe(etag);
        const row = await runRow(warehouse, third!.runId);
        expect(row).toMatchObject({
          status: 'succeeded',
          complete: true,
          not_modified: true,
          outcome: 'unchanged',
          export_etag: etag,
          records_read: 0,
          removed: 0,
        });
        // Seen by this run: last_seen_at moved on for every current report, nothing else changed.
        expect(String(row?.last_seen_max) > String(seenBefore)).toBe(true);
        expect(await query(warehouse, SNAPSHOT)).toEqual(before);
        expect(await query(warehouse, `SELECT count(*)::INTEGER AS n FROM report_versions`)).toEqual(
          versions,
        );

        // Once the export changes, the conditional request gets the new export and merges it.
        const day = sim.advanceDays(1);
        const [fourth] = await syncTargetOnce(warehouse, config, target);
        expect(fourth?.notModified).toBeUndefined();
        expect(fourth?.counters.inserted).toBe(day.added);
        expect((await runRow(warehouse, fourth!.runId))?.outcome).toBe('changed');
      } finally {
        await warehouse.close();
      }
    },
  );

  it('a conditional request sends the validators of the last complete run only: none when that run had none', async () => {
    const line = (status: string) =>
      `${JSON.stringify({
        id: 'c-1',
        status,
        destination: 'ROAD_CONTROL',
        createdAt: '2024-01-01T00:00:00.000Z',
        updatedAt: status === 'SUBMITTED' ? '2024-01-01T00:00:00.000Z' : '2024-01-02T00:00:00.000Z',
      })}\n`;
    let served = { body: line('SUBMITTED'), etag: '"a"' as string | undefined };
    const server = await startRawServer((req, res) => {
      if (req.url?.endsWith('/stats')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ total: 1 }));
      } else if (served.etag !== undefined && req.headers['if-none-match'] === served.etag) {
        res.writeHead(304, { etag: served.etag }).end();
      } else {
        res.writeHead(200, {
          'content-type': 'application/x-ndjson',
          ...(served.etag ? { etag: served.etag } : {}),
        });
        res.end(served.body);
      }
    });
    const config = testConfig(server.url, `${tmp.dir}/w.duckdb`);
    const warehouse = await openTestWarehouse(config);
    const status = async () => (await query(warehouse, `SELECT status FROM reports`))[0]?.status;
    try {
      expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.status).toBe('succeeded');
      expect((await syncTargetOnce(warehouse, config, 'ndjson'))[0]?.notModified).toBe(true);
      served = { body: line('RESOLVED'), etag: undefined }; // the upstream stopped sending an ETag
      await syncTargetOnce(warehouse, config, 'ndjson');
      expect(await status()).toBe('RESOLVED');
      served = { body: line('SUBMITTED'), etag: '"a"' }; // back to the first export, and its ETag
      const [last] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(last?.notModified).toBeUndefined();
      expect(server.requests.at(-1)?.headers['if-none-match']).toBeUndefined();
      expect(await status()).toBe('SUBMITTED');
    } finally {
      warehouse.close();
      await server.close();
    }
  });

  it.each(['ndjson', 'csv'] as const)(
    'a %s run whose deletes were held back (/stats down) is not the version a 304 confirms: the next run reads the export and infers them',
    async (target) => {
      const sim = await startTestSimulator({ generate: { n: 300, seed: 4 } });
      const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { csvPageSize: 100, retries: 0 });
      const warehouse = await openTestWarehouse(config);
      try {
        expect((await syncTargetOnce(warehouse, config, target))[0]?.status).toBe('succeeded');
        sim.advanceDays(1); // a day with unpublished reports
        sim.setFaults(['stats:status=500']);
        const [held] = await syncTargetOnce(warehouse, config, target);
        expect([held?.status, held?.incompleteReason, held?.counters.removed]).toEqual([
          'succeeded',
          undefined,
          0,
        ]);
        expect(held?.exportInfo?.etag).toBeDefined();

        sim.setFaults([]);
        const [next] = await syncTargetOnce(warehouse, config, target);
        expect(next?.status).toBe('succeeded');
        expect(next?.notModified).toBeFalsy();
        expect(next?.counters.removed).toBeGreaterThan(0);
        const [{ current } = {}] = await query(
          warehouse,
          `SELECT count(*)::INTEGER AS current FROM reports WHERE removed_at IS NULL`,
        );
        const upstream = (await (await fetch(`${sim.url}/api/v1/public/reports/stats`)).json()) as {
          total: number;
        };
        expect(current).toBe(upstream.total);
        // Settled now: the run after it is a 304 again.
        const [after] = await syncTargetOnce(warehouse, config, target);
        expect(after?.notModified).toBe(true);
      } finally {
        warehouse.close();
        await sim.close();
      }
    },
  );

  it('REPORTS_CONDITIONAL_EXPORTS=false downloads the export every time', async () => {
    const sim = await startTestSimulator({ generate: { n: 50, seed: 4 } });
    const config = testConfig(sim.url, `${tmp.dir}/w.duckdb`, { conditionalExports: false });
    const warehouse = await openTestWarehouse(config);
    try {
      await syncTargetOnce(warehouse, config, 'ndjson');
      sim.clearRequests();
      const [again] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(again?.notModified).toBeUndefined();
      const exports = sim.requests().filter((r) => r.path.includes('.ndjson'));
      expect(exports.map((r) => [r.status, r.headers['if-none-match']])).toEqual([[200, undefined]]);
      expect((await runRow(warehouse, again!.runId))?.outcome).toBe('unchanged');
    } finally {
      await warehouse.close();
    }
  });

  it.each([
    ['ndjson', 'csv'],
    ['csv', 'ndjson'],
  ] as const)(
    'a %s export unchanged since a %s run removed a report it holds is read again, and the report revived',
    async (source, other) => {
      // A server whose ETag is a hash of the body (as Express and many CDNs send): an export that is the
      // same again answers 304 to the tag of its first reading.
      const rec = (i: number) => ({
        id: `R${String(i).padStart(2, '0')}`,
        status: 'SUBMITTED',
        destination: 'ROAD_CONTROL',
        createdAt: '2024-01-01T00:00:00.000Z',
      });
      let rows = Array.from({ length: 40 }, (_, i) => rec(i));
      const { createHash } = await import('node:crypto');
      const server = await startRawServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: rows.length }));
        const csv = url.pathname.endsWith('.csv');
        const page = csv && url.searchParams.get('page') !== '1' ? [] : rows;
        const body = csv
          ? ['id,status,destination,createdAt', ...page.map((r) => Object.values(r).join(','))].join('\n') +
            '\n'
          : rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
        const tag = `"${createHash('sha1').update(body).digest('hex')}"`;
        if (req.headers['if-none-match'] === tag) return void res.writeHead(304, { etag: tag }).end();
        res.writeHead(200, { 'content-type': csv ? 'text/csv' : 'application/x-ndjson', etag: tag });
        res.end(body);
      });
      const config = testConfig(server.url, `${tmp.dir}/w.duckdb`);
      const warehouse = await openTestWarehouse(config);
      try {
        expect((await syncTargetOnce(warehouse, config, source))[0]?.status).toBe('succeeded');
        const r07 = rows[7]!;
        rows = rows.filter((r) => r !== r07);
        expect((await syncTargetOnce(warehouse, config, other))[0]?.counters.removed).toBe(1);
        rows = Array.from({ length: 40 }, (_, i) => rec(i)); // R07 published again, as before

        const [again] = await syncTargetOnce(warehouse, config, source);
        expect(again?.notModified).toBeUndefined();
        expect(again?.counters.revived).toBe(1);
        const [current] = await query(warehouse, `SELECT count(*)::INTEGER AS n FROM current_reports`);
        expect(current?.n).toBe(40);
        // Read once more, unchanged, with nothing removed by another source since: a 304.
        const [then] = await syncTargetOnce(warehouse, config, source);
        expect(then?.notModified).toBe(true);
      } finally {
        await warehouse.close();
        await server.close();
      }
    },
  );
});
