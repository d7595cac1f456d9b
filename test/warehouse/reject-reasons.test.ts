import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadDataset } from '../../src/simulator/load-dataset.js';
import { ndjsonSource } from '../../src/sync/sources/ndjson-source.js';
import { rejectReasons } from '../../src/warehouse/reject-reasons.js';
import { runCli } from '../helpers/cli.js';
import { startTestSimulator } from '../helpers/simulator.js';
import { openTestWarehouse, query, syncOnce, tempDir, testConfig } from '../helpers/sync.js';

const valid = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id,
    status: 'SUBMITTED',
    destination: 'ROAD_CONTROL',
    location: { lat: 50.9, lng: 6.9 },
    createdAt: '2024-03-01T08:00:00Z',
    ...extra,
  });

// Records that fail for the same reason in words that differ: parser positions, quoted values.
const LINES = [
  ...Array.from({ length: 20 }, (_, i) => valid(`ok-${i}`)),
  '{"id": "m1", "status": ',
  '{bad json}',
  '[1, 2',
  '{"id": "m4",, }',
  valid('lat-1', { location: { lat: 91, lng: 1 } }),
  valid('lat-2', { location: { lat: 123.5, lng: 1 } }),
  valid('ts-1', { createdAt: 'yesterday' }),
  valid('ts-2', { createdAt: '2024-13-45' }),
  valid('ts-3', { createdAt: '01/02/2024' }),
];

describe('reject reasons: grouped by the path and code of the first issue', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir();
  });
  afterEach(() => tmp.cleanup());

  it('puts records that fail alike in one group whatever their messages quote; the groups add up to the rejects', async () => {
    const file = join(tmp.dir, 'data.ndjson');
    writeFileSync(file, `${LINES.join('\n')}\n`);
    const sim = await startTestSimulator({ dataset: await loadDataset(file) });
    const config = testConfig(sim.url, join(tmp.dir, 'w.duckdb'), { maxRejectRatio: 1 });
    const warehouse = await openTestWarehouse(config);
    let runId: string;
    try {
      const run = await syncOnce(warehouse, config, ndjsonSource);
      runId = run.runId;
      expect(run.counters.recordsRejected).toBe(9);
      const connection = await warehouse.connect();
      try {
        // The four malformed lines' messages differ (each names its own position or token).
        const messages = await query(
          connection,
          `SELECT DISTINCT issues->>'$[0].message' AS m FROM rejected_records WHERE issues->>'$[0].code' = 'malformed_json'`,
        );
        expect(messages.length).toBeGreaterThan(1);
        const groups = await rejectReasons(connection, { runId });
        expect(groups.map((g) => [g.path, g.code, g.records])).toEqual([
          ['', 'malformed_json', 4],
          ['createdAt', 'invalid_timestamp', 3],
          ['lat', 'too_big', 2],
        ]);
        expect(groups.reduce((n, g) => n + g.records, 0)).toBe(run.counters.recordsRejected);
        expect(groups[0]!.reason).toMatch(/^\(record\): malformed JSON/);
        expect(groups[0]!.locations).toHaveLength(3); // the first three, in export order
        expect(groups[0]!.locations[0]).toBe('line 21');

        // A record quarantined before issues carried a code is grouped by its message.
        await connection.run(
          `INSERT INTO rejected_records (run_id, source, location, raw, raw_truncated, raw_bytes, issues, rejected_at)
           VALUES ($run, 'ndjson', 'line 99', '{}', false, 2, '[{"path":"id","message":"old words"}]', now())`,
          { run: runId },
        );
        const withOld = await rejectReasons(connection, { runId });
        expect(withOld.find((g) => g.path === 'id')).toMatchObject({ code: 'old words', records: 1 });
      } finally {
        connection.closeSync();
      }
    } finally {
      warehouse.close();
    }

    // The summary and sync --json show the same groups (later syncs, asked unconditionally: their own runs
    // quarantine the same records).
    const env = {
      REPORTS_BASE_URL: sim.url,
      REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb'),
      REPORTS_MAX_REJECT_RATIO: '1',
      REPORTS_CONDITIONAL_EXPORTS: 'false',
    };
    const text = await runCli(['sync', '--source', 'ndjson'], env);
    expect(text.code, text.stderr).toBe(0);
    const rows = text.stdout
      .split('\n')
      .filter((l) => /^\s{4}\S.*\s(malformed_json|invalid_timestamp|too_big)\s/.test(l));
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/\(record\)\s+malformed_json\s+4\s+malformed JSON/);
    const json = await runCli(['sync', '--source', 'ndjson', '--json'], env);
    const doc = JSON.parse(json.stdout) as {
      runs: { rejectsByReason: { path: string; code: string; records: number }[] }[];
    };
    expect(doc.runs[0]!.rejectsByReason.map((r) => [r.path, r.code, r.records])).toEqual([
      ['', 'malformed_json', 4],
      ['createdAt', 'invalid_timestamp', 3],
      ['lat', 'too_big', 2],
    ]);
  });

  it('tells, per group, the later issues of its records: what else must change before they load', async () => {
    // Every record has a destination of the wrong type first, and some a zone-less createdAt too.
    const lines = Array.from({ length: 12 }, (_, i) =>
      valid(`two-${i}`, { destination: 7, ...(i < 5 ? { createdAt: '2024-04-16T03:03:15.000' } : {}) }),
    );
    const file = join(tmp.dir, 'data.ndjson');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const sim = await startTestSimulator({ dataset: await loadDataset(file) });
    const env = {
      REPORTS_BASE_URL: sim.url,
      REPORTS_WAREHOUSE: join(tmp.dir, 'w.duckdb'),
      REPORTS_MAX_REJECT_RATIO: '1',
    };
    const json = await runCli(['sync', '--source', 'ndjson', '--json'], env);
    const doc = JSON.parse(json.stdout) as {
      runs: { rejectsByReason: { path: string; code: string; records: number; alsoIssues: unknown[] }[] }[];
    };
    expect(doc.runs[0]!.rejectsByReason).toMatchObject([
      {
        path: 'destination',
        records: 12,
        alsoIssues: [{ path: 'createdAt', code: 'invalid_timestamp', records: 5 }],
      },
    ]);
    const text = await runCli(['sync', '--source', 'ndjson'], {
      ...env,
      REPORTS_CONDITIONAL_EXPORTS: 'false',
    });
    expect(text.stdout).toMatch(/also wrong/);
    expect(text.stdout).toMatch(/createdAt invalid_timestamp 5/);
  });
});
