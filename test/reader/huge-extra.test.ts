import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSyncedReader, type SyncedReader } from '../helpers/reader.js';
import { updateServingIndex } from '../../src/warehouse/serving-index.js';
import { query } from '../helpers/sync.js';

const KEYS = 50_000;

/**
 * Whatever the warehouse holds, a read never answers 500 for one big row: a report with 50,000 unknown
 * fields (about 1.3 MB of `extra`), written straight into a synced warehouse as a run would commit it.
 */
describe('reader over a warehouse holding one report with 50,000 unknown fields', () => {
  let s: SyncedReader;
  const id = 'huge-extra-1';
  beforeAll(async () => {
    s = await startSyncedReader(
      { generate: { n: 3000, seed: 11 } },
      { readerValidatorsTtlMs: 0, duckdbMemoryLimit: '256MiB' },
    );
    const extra = JSON.stringify(Object.fromEntries(Array.from({ length: KEYS }, (_, i) => [`x_${i}`, i])));
    const c = await s.warehouse.connect();
    const now = new Date();
    try {
      await c.run('BEGIN TRANSACTION');
      await c.run(
        `INSERT INTO report_rows (id, status, destination, category, description, lat, lng, address, created_at,
           updated_at, extra, content_hash, first_seen_at, last_seen_at, last_changed_at, source, run_id)
         VALUES ($id, 'SUBMITTED', 'ROAD_CONTROL', 'x', 'wide', 50.1, 14.4, 'somewhere',
           now() + INTERVAL 1 DAY, now() + INTERVAL 1 DAY, $extra::JSON, 'h', $now::TIMESTAMPTZ,
           $now::TIMESTAMPTZ, $now::TIMESTAMPTZ, 'ndjson', 'wide-run')`,
        { id, extra, now: now.toISOString() },
      );
      await updateServingIndex(c, { now, refined: false });
      await c.run(
        `INSERT INTO sync_runs (run_id, job, source, status, started_at, finished_at, inserted)
         VALUES ('wide-run', 'sync-ndjson', 'ndjson', 'succeeded', now(), now() + INTERVAL 1 SECOND, 1)`,
      );
      await c.run('COMMIT');
    } finally {
      c.closeSync();
    }
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  it('lists it on every page size, with all its fields', async () => {
    for (const path of ['/reports', '/reports?pageSize=1000', '/reports?status=SUBMITTED&pageSize=1']) {
      const res = await fetch(s.reader.api(path));
      expect(res.status, path).toBe(200);
      const [first] = (await res.json()) as Array<Record<string, unknown>>;
      expect(first?.id, path).toBe(id);
      expect(Object.keys(first ?? {}).filter((k) => k.startsWith('x_'))).toHaveLength(KEYS);
    }
    const later = await fetch(s.reader.api('/reports?pageSize=1000&page=3'));
    expect(later.status).toBe(200);
  });

  it('exports it in NDJSON, GeoJSON and every CSV page, and counts it in the stats', async () => {
    const ndjson = await fetch(s.reader.api('/reports.ndjson'));
    expect(ndjson.status).toBe(200);
    const lines = (await ndjson.text()).trimEnd().split('\n');
    const wide = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((r) => r.id === id);
    expect(Object.keys(wide ?? {}).filter((k) => k.startsWith('x_'))).toHaveLength(KEYS);

    const geojson = await fetch(s.reader.api('/reports.geojson?status=SUBMITTED'));
    expect(geojson.status).toBe(200);
    expect(await geojson.text()).toContain(`"id":"${id}"`);

    const [row] = await query(s.warehouse, 'SELECT count(*) AS n FROM reports WHERE removed_at IS NULL');
    const total = Number(row?.n);
    for (const page of [1, Math.ceil(total / 1000)]) {
      const csv = await fetch(s.reader.api(`/reports.csv?pageSize=1000&page=${page}`));
      expect(csv.status, `CSV page ${page}`).toBe(200);
      const text = await csv.text();
      const header = text.slice(0, text.indexOf('\r\n')).split(',');
      expect(header).toContain(`x_${KEYS - 1}`);
    }
    const stats = await fetch(s.reader.api('/reports/stats'));
    expect(stats.status).toBe(200);
    expect(((await stats.json()) as { total: number }).total).toBe(total);
  });
});
