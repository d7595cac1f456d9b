import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestReader } from '../helpers/reader.js';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const head = (id: string) =>
  `"id":"${id}","status":"SUBMITTED","destination":"ROAD_CONTROL","createdAt":"2024-01-01T00:00:00Z"`;
// Unknown fields a JavaScript object or a double would change: prototype keys, numbers beyond a double.
const exactTail =
  ',"__proto__":{"x":1},"constructor":"c","toString":[1,2],"big":12345678901234567890,"huge":1e400,' +
  '"one":1.0,"tiny":-1e-400,"nested":{"n":123456789012345678901234567890,"__proto__":null},"hasOwnProperty":true';
const exact = `{${head('exact')}${exactTail}}`;

function ndjsonServer(lines: () => string[]) {
  return startRawServer((req, res) => {
    if (req.url?.endsWith('/reports/stats')) {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end(`${lines().join('\n')}\n`);
  });
}

describe('unknown fields exactly as sent, repeated keys quarantined', () => {
  for (const decodeWorkers of [0, 1]) {
    it(`keeps them byte for byte through the warehouse and the reader (${decodeWorkers} decode workers)`, async () => {
      let constructorValue = '"c"';
      const lines = () => [
        exact.replace('"constructor":"c"', `"constructor":${constructorValue}`),
        `{${head('dup-top')},"status":"RESOLVED"}`,
        `{${head('dup-nested')},"meta":{"a":1,"b":{"k":1,"k":2}}}`,
        `{${head('dup-escaped')},"x":1,"\\u0078":2}`,
        `{${head('dup-in-array')},"list":[{"a":1},{"a":1,"a":2}]}`,
        `{${head('same-key-other-objects')},"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}`,
      ];
      const upstream = await ndjsonServer(lines);
      const config = testConfig(upstream.url, join(tmp.dir, `w${decodeWorkers}.duckdb`), {
        decodeWorkers,
        maxRejectRatio: 1,
      });
      const warehouse = await openTestWarehouse(config);
      const reader = await startTestReader(warehouse, config);
      try {
        const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
        expect(run?.status, JSON.stringify(run?.error?.message)).toBe('succeeded');
        expect(run?.counters).toMatchObject({ recordsRead: 6, recordsLoaded: 2, recordsRejected: 4 });
        const rejects = await query(
          warehouse,
          `SELECT record_id, issues::VARCHAR AS issues FROM rejected_records ORDER BY record_id`,
        );
        expect(rejects.map((r) => r.record_id)).toEqual([
          'dup-escaped',
          'dup-in-array',
          'dup-nested',
          'dup-top',
        ]);
        expect(JSON.parse(rejects[2]!.issues as string)).toEqual([
          {
            path: 'meta.b.k',
            message: 'duplicate key "k": the object gives it twice',
            code: 'conflicting_values',
          },
        ]);
        expect(rejects[1]!.issues).toContain('list[1].a');
        expect(rejects[3]!.issues).toContain('"status"');

        const served = await (await fetch(reader.api('/reports.ndjson'))).text();
        const line = served.split('\n').find((l) => l.includes('"exact"'));
        expect(line).toBe(
          `{"id":"exact","status":"SUBMITTED","destination":"ROAD_CONTROL","category":null,"description":null,` +
            `"location":null,"address":null,"createdAt":"2024-01-01T00:00:00.000Z","updatedAt":"2024-01-01T00:00:00.000Z"` +
            exactTail +
            '}',
        );
        const listed = await (await fetch(reader.api('/reports'))).text();
        expect(listed).toContain(exactTail);
        const csv = await (await fetch(reader.api('/reports.csv'))).text();
        expect(csv).toContain('12345678901234567890,1e400,1.0,-1e-400');

        // A change to a prototype-named field is a change: a new version.
        constructorValue = '"d"';
        const [second] = await syncTargetOnce(warehouse, config, 'ndjson');
        expect(second?.counters).toMatchObject({ updated: 1, unchanged: 1 });
        const versions = await query(
          warehouse,
          `SELECT extra->>'constructor' AS c FROM report_versions WHERE id = 'exact' ORDER BY valid_from`,
        );
        expect(versions).toEqual([{ c: 'c' }, { c: 'd' }]);
      } finally {
        await reader.close();
        await upstream.close();
        warehouse.close();
      }
    });
  }
});
