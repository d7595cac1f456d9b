import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startRawServer, type RawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const KNOWN = '"status":"SUBMITTED","destination":"ROAD_CONTROL","createdAt":"2024-01-01T00:00:00Z"';

/** An upstream whose headers and keys are hostile but legal: repeated columns, prototype names. */
async function hostileUpstream(stats: string): Promise<RawServer> {
  const csv =
    'id,status,destination,createdAt,__proto__,constructor,note,note\r\n' +
    'c1,SUBMITTED,ROAD_CONTROL,2024-01-01T00:00:00Z,proto cell,ctor cell,same,same\r\n' +
    'c2,SUBMITTED,ROAD_CONTROL,2024-01-01T00:00:00Z,,,first,second\r\n';
  const ndjson =
    `{"id":"n1",${KNOWN},"__proto__":{"polluted":true},"prototype":1}\n` +
    `{"id":"n2",${KNOWN},"location":{"lat":1,"lng":2,"accuracy":5},"location.accuracy":9}\n`;
  const list = `[{"id":"l1",${KNOWN},"constructor":"c","__proto__":[1]},{"id":"l2",${KNOWN},"note":1,"note":2}]`;
  return startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (type: string, body: string) => res.writeHead(200, { 'content-type': type }).end(body);
    if (url.pathname.endsWith('/stats')) return send('application/json', stats);
    if (url.pathname.endsWith('.csv'))
      return send(
        'text/csv',
        url.searchParams.get('page') === '1' ? csv : csv.slice(0, csv.indexOf('\r\n') + 2),
      );
    if (url.pathname.endsWith('.ndjson')) return send('application/x-ndjson', ndjson);
    return send('application/json', url.searchParams.get('page') === '1' ? list : '[]');
  });
}

describe('headers and keys from the upstream', () => {
  it('keeps every column and key through the pipeline, or quarantines the record naming the column', async () => {
    const up = await hostileUpstream('{"total":6}');
    const config = testConfig(up.url, join(tmp.dir, 'w.duckdb'), { maxRejectRatio: 1, csvPageSize: 10 });
    const warehouse = await openTestWarehouse(config);
    try {
      for (const target of ['csv', 'ndjson', 'recent'] as const) {
        const [run] = await syncTargetOnce(warehouse, config, target);
        expect(run?.status, run?.error?.message).toBe('succeeded');
      }
      const stored = await query(warehouse, 'SELECT id, extra::VARCHAR AS extra FROM reports ORDER BY id');
      expect(stored).toEqual([
        { id: 'c1', extra: '{"__proto__":"proto cell","constructor":"ctor cell","note":"same"}' },
        { id: 'l1', extra: '{"constructor":"c","__proto__":[1]}' },
        { id: 'n1', extra: '{"__proto__":{"polluted":true},"prototype":1}' },
      ]);
      const rejects = await query(
        warehouse,
        `SELECT record_id, issues->>'$[0].path' AS path, issues->>'$[0].message' AS message
         FROM rejected_records ORDER BY record_id`,
      );
      expect(rejects.map((r) => [r.record_id, r.path])).toEqual([
        ['c2', 'note'],
        ['l2', 'note'],
        ['n2', 'location.accuracy'],
      ]);
      expect(String(rejects[0]?.message)).toContain('"first" vs "second"');
    } finally {
      warehouse.close();
      await up.close();
    }
  });

  it('refuses a /stats body that gives a counter twice, naming it, instead of keeping the last', async () => {
    const up = await hostileUpstream('{"total":3,"byStatus":{"SUBMITTED":2,"SUBMITTED":3}}');
    const config = testConfig(up.url, join(tmp.dir, 'w.duckdb'), { maxRejectRatio: 1 });
    const warehouse = await openTestWarehouse(config);
    try {
      const [stats] = await syncTargetOnce(warehouse, config, 'stats');
      expect(stats?.status).toBe('failed');
      expect(stats?.error?.message).toContain('"SUBMITTED" twice (at byStatus.SUBMITTED)');
      const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
      expect(run?.status).toBe('succeeded');
      const [facts] = await query(
        warehouse,
        'SELECT tombstones_note, stats_total_upstream FROM sync_runs WHERE run_id = $run',
        { run: run?.runId ?? '' },
      );
      expect(String(facts?.tombstones_note)).toContain('"SUBMITTED" twice');
      expect(facts?.stats_total_upstream).toBeNull();
      const values = await query(
        warehouse,
        `SELECT count(*) AS n FROM stats_values WHERE source = 'upstream'`,
      );
      expect(values).toEqual([{ n: 0 }]);
    } finally {
      warehouse.close();
      await up.close();
    }
  });
});
