import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { startRawServer } from '../helpers/raw-server.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

// The seed names no field but `destination` and `status`: an upstream writing snake_case or another case
// (`created_at`, `ID`) serves the same reports as one writing the wire names.

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const camel = (i: number) =>
  `{"id":"F-${i}","status":"SUBMITTED","destination":"ROAD_CONTROL","createdAt":"2024-01-01T00:0${i}:00Z",` +
  `"updatedAt":"2024-01-02T00:00:00Z","lat":52.5,"lng":13.4,"score":1.0}`;
const snake = (i: number) =>
  `{"ID":"F-${i}","Status":"SUBMITTED","destination":"ROAD_CONTROL","created_at":"2024-01-01T00:0${i}:00Z",` +
  `"updated_at":"2024-01-02T00:00:00Z","latitude":52.5,"longitude":13.4,"score":1.0}`;

async function upstream(line: (i: number) => string) {
  const lines = Array.from({ length: 6 }, (_, i) => line(i));
  const server = await startRawServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: lines.length }));
    if (url.pathname.endsWith('.ndjson')) {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      return void res.end(`${lines.join('\n')}\n`);
    }
    const page = Number(url.searchParams.get('page'));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(page === 1 ? `[${[...lines].reverse().join(',')}]` : '[]');
  });
  onTestFinished(() => server.close());
  return server;
}

describe('field names in another style', () => {
  it.each(['ndjson', 'recent'] as const)(
    'a %s run of snake_case and capitalised keys stores the reports the wire names give',
    async (target) => {
      const stored: unknown[] = [];
      for (const line of [camel, snake]) {
        const server = await upstream(line);
        const config = testConfig(server.url, `${tmp.dir}/w-${stored.length}.duckdb`);
        const warehouse = await openTestWarehouse(config);
        onTestFinished(() => warehouse.close());
        const [run] = await syncTargetOnce(warehouse, config, target);
        expect(run?.status, run?.error?.message).toBe('succeeded');
        expect(run?.counters).toMatchObject({ recordsLoaded: 6, recordsRejected: 0 });
        stored.push(
          await query(
            warehouse,
            `SELECT id, created_at, updated_at, lat, lng, extra::VARCHAR AS extra, content_hash FROM reports ORDER BY id`,
          ),
        );
      }
      expect(stored[1]).toEqual(stored[0]);
    },
  );

  it.each(['ndjson', 'recent'] as const)(
    'a %s record quarantined under an `ID` key keeps its id, which protects its report from deletes',
    async (target) => {
      const bad = (line: string) => line.replace('"latitude":52.5', '"latitude":95');
      let lines = Array.from({ length: 20 }, (_, i) => snake(i % 10).replace(`F-${i % 10}`, `F-${i}`));
      const server = await startRawServer((req, res) => {
        const url = new URL(req.url ?? '/', 'http://x');
        if (url.pathname.endsWith('/stats')) return void res.end(JSON.stringify({ total: lines.length }));
        if (url.pathname.endsWith('.ndjson')) return void res.end(`${lines.join('\n')}\n`);
        res.end(Number(url.searchParams.get('page')) === 1 ? `[${[...lines].reverse().join(',')}]` : '[]');
      });
      onTestFinished(() => server.close());
      const config = testConfig(server.url, `${tmp.dir}/w.duckdb`, { maxRejectRatio: 0.1 });
      const warehouse = await openTestWarehouse(config);
      onTestFinished(() => warehouse.close());
      await syncTargetOnce(warehouse, config, 'ndjson');
      // F-19 unpublished; F-2 still published, with a latitude out of range.
      lines = lines.slice(0, 19).map((line, i) => (i === 2 ? bad(line) : line));

      const [run] = await syncTargetOnce(warehouse, config, target);
      expect(run?.counters.recordsRejected).toBe(1);
      const [reject] = await query(warehouse, `SELECT record_id FROM rejected_records WHERE run_id = $run`, {
        run: run!.runId,
      });
      expect(reject?.record_id).toBe('F-2');
      if (target === 'ndjson') {
        const removed = await query(warehouse, `SELECT id FROM reports WHERE removed_at IS NOT NULL`);
        expect(removed.map((r) => r.id)).toEqual(['F-19']);
      }
    },
  );
});
