import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/warehouse/migrate.js';
import { startRawServer } from '../helpers/raw-server.js';
import { runCli } from '../helpers/cli.js';
import { startTestReader } from '../helpers/reader.js';
import { openTestWarehouse, query, syncTargetOnce, tempDir, testConfig } from '../helpers/sync.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

const HOUR = 3_600_000;

// One report's time and place, relative to the moment of the sync: hours (kept away from the rule's
// 24 h margin, where the outcome would depend on the test's own duration).
const report = fc.record({
  createdH: fc.oneof(fc.integer({ min: -5_000, max: 20 }), fc.integer({ min: 30, max: 100_000 })),
  updatedDeltaH: fc.oneof(fc.constant(0), fc.integer({ min: -48, max: 48 })),
  place: fc.constantFrom('none', 'island', 'berlin', 'equator', 'meridian'),
});
type Generated = { createdH: number; updatedDeltaH: number; place: string };

const COORDS: Record<string, string> = {
  none: 'null',
  island: '{"lat":0,"lng":0}',
  berlin: '{"lat":52.5,"lng":13.4}',
  equator: '{"lat":0,"lng":13.4}',
  meridian: '{"lat":52.5,"lng":0.0}',
};

function line(r: Generated, i: number, now: number): string {
  const created = new Date(now + r.createdH * HOUR).toISOString();
  const updated = new Date(now + (r.createdH + r.updatedDeltaH) * HOUR).toISOString();
  return `{"id":"q${i}","status":"SUBMITTED","destination":"ROAD_CONTROL","location":${COORDS[r.place]},"createdAt":"${created}","updatedAt":"${updated}"}`;
}

/** The rules of docs/guarantees.md ("Data quality"), computed apart from the warehouse. */
function expectedRules(r: Generated): string[] {
  const rules: string[] = [];
  if (r.updatedDeltaH < 0) rules.push('updated_before_created');
  if (r.createdH > 24) rules.push('created_in_future');
  if (r.createdH + r.updatedDeltaH > 24) rules.push('updated_in_future');
  if (r.place === 'island') rules.push('null_island');
  return rules;
}

describe('values legal but impossible', () => {
  it('are loaded and flagged by rule, report and run; an unchanged re-sync flags nothing new', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(report, { minLength: 1, maxLength: 12 }), async (reports) => {
        const now = Date.now();
        let body = `${reports.map((r, i) => line(r, i, now)).join('\n')}\n`;
        const up = await startRawServer((req, res) => {
          if (req.url?.endsWith('/stats')) return void res.end(JSON.stringify({ total: reports.length }));
          res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(body);
        });
        const config = testConfig(up.url, join(tmp.dir, `q${round++}.duckdb`));
        const warehouse = await openTestWarehouse(config);
        try {
          const [first] = await syncTargetOnce(warehouse, config, 'ndjson');
          expect(first?.status, first?.error?.message).toBe('succeeded');
          expect(first?.counters.recordsLoaded).toBe(reports.length); // loaded, not quarantined
          const expected = reports.flatMap((r, i) => expectedRules(r).map((rule) => `q${i} ${rule}`)).sort();
          const flags = await query(
            warehouse,
            `SELECT report_id || ' ' || rule AS flag, run_id FROM data_quality_flags ORDER BY flag`,
          );
          expect(flags.map((f) => f.flag)).toEqual(expected);
          expect(new Set(flags.map((f) => f.run_id))).toEqual(new Set(flags.length ? [first?.runId] : []));
          expect(first?.counters.qualityFlags).toBe(expected.length);
          const [row] = await query(warehouse, `SELECT quality_flags FROM sync_runs WHERE run_id = $r`, {
            r: first?.runId ?? '',
          });
          expect(row?.quality_flags).toBe(expected.length);

          const [again] = await syncTargetOnce(warehouse, { ...config, conditionalExports: false }, 'ndjson');
          expect(again?.counters.qualityFlags).toBe(0);
          expect(await query(warehouse, `SELECT count(*) AS n FROM data_quality_flags`)).toEqual([
            { n: expected.length },
          ]);

          // The upstream corrects every report: the current ones carry no flag, the history keeps them.
          body = `${reports.map((_, i) => line({ createdH: -1, updatedDeltaH: 0, place: 'berlin' }, i, now)).join('\n')}\n`;
          await syncTargetOnce(warehouse, { ...config, conditionalExports: false }, 'ndjson');
          expect(await query(warehouse, `SELECT count(*) AS n FROM current_quality_flags`)).toEqual([
            { n: 0 },
          ]);
        } finally {
          warehouse.close();
          await up.close();
        }
      }),
      { numRuns: 12, endOnFailure: true },
    );
  }, 180_000);

  it('are counted by the summary, sync --json, status and the status page', async () => {
    const now = Date.now();
    const lines = [
      line({ createdH: -10, updatedDeltaH: -3, place: 'berlin' }, 1, now),
      line({ createdH: -10, updatedDeltaH: 1, place: 'island' }, 2, now),
      line({ createdH: 24 * 400, updatedDeltaH: 0, place: 'none' }, 3, now),
      line({ createdH: -10, updatedDeltaH: 1, place: 'berlin' }, 4, now),
    ];
    const up = await startRawServer((req, res) => {
      if (req.url?.endsWith('/stats')) return void res.end('{"total":4}');
      res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(`${lines.join('\n')}\n`);
    });
    const path = join(tmp.dir, 'cli.duckdb');
    const env = { REPORTS_BASE_URL: up.url, REPORTS_WAREHOUSE: path, REPORTS_LOG_LEVEL: 'warn' };
    try {
      const text = await runCli(['sync', '--source', 'ndjson'], env);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(
        /data quality: 4 impossible values loaded and flagged, reports by rule: created_in_future 1, null_island 1, updated_before_created 1, updated_in_future 1 /,
      );
      const json = await runCli(['sync', '--source', 'ndjson', '--json'], {
        ...env,
        REPORTS_CONDITIONAL_EXPORTS: 'false',
      });
      const doc = JSON.parse(json.stdout) as {
        runs: Array<{ counters: { qualityFlags: number }; qualityFlags: unknown[] }>;
      };
      expect(doc.runs[0]?.counters.qualityFlags).toBe(0); // nothing new: flags belong to the versions
      expect(doc.runs[0]?.qualityFlags).toEqual([]);
      const status = await runCli(['status', '--json'], env);
      const report = JSON.parse(status.stdout) as {
        qualityFlags: unknown[];
        runs: Array<{ flagged: number }>;
      };
      expect(report.qualityFlags).toEqual([
        { rule: 'created_in_future', reports: 1 },
        { rule: 'null_island', reports: 1 },
        { rule: 'updated_before_created', reports: 1 },
        { rule: 'updated_in_future', reports: 1 },
      ]);
      expect(report.runs.map((r) => r.flagged)).toEqual([0, 4]);
      expect((await runCli(['status'], env)).stdout).toMatch(
        /Data quality: current reports with impossible values/,
      );

      const config = testConfig(up.url, path);
      const warehouse = await openTestWarehouse(config);
      const reader = await startTestReader(warehouse, config);
      try {
        const page = await (await fetch(`${reader.url}/`)).text();
        expect(page).toContain('<h2 id="quality">Data quality</h2>');
        expect(page).toMatch(/<td>null_island<\/td><td class="n">1<\/td>/);
      } finally {
        await reader.close();
        warehouse.close();
      }
    } finally {
      await up.close();
    }
  }, 120_000);

  it('a warehouse upgraded to them judges its current reports once (migration 013)', async () => {
    const now = Date.now();
    const lines = [0, 1, 2].map((i) =>
      line({ createdH: -10, updatedDeltaH: i === 0 ? -1 : 0, place: i === 1 ? 'island' : 'berlin' }, i, now),
    );
    const up = await startRawServer((req, res) => {
      if (req.url?.endsWith('/stats')) return void res.end('{"total":3}');
      res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(`${lines.join('\n')}\n`);
    });
    const config = testConfig(up.url, join(tmp.dir, 'old.duckdb'));
    const warehouse = await openTestWarehouse(config);
    try {
      const [run] = await syncTargetOnce(warehouse, config, 'ndjson');
      const before = await query(warehouse, 'SELECT * FROM data_quality_flags ORDER BY report_id, rule');
      expect(before.map((f) => [f.report_id, f.rule, f.run_id])).toEqual([
        ['q0', 'updated_before_created', run?.runId],
        ['q1', 'null_island', run?.runId],
      ]);
      // Back to the schema before the migration, then upgraded.
      const c = await warehouse.connect();
      try {
        await c.run(`DROP VIEW current_quality_flags; DROP TABLE data_quality_flags;
          ALTER TABLE sync_runs DROP COLUMN quality_flags; DELETE FROM schema_migrations WHERE version = 13`);
        expect(await migrate(c)).toEqual([13]);
      } finally {
        c.closeSync();
      }
      expect(await query(warehouse, 'SELECT * FROM data_quality_flags ORDER BY report_id, rule')).toEqual(
        before,
      );
    } finally {
      warehouse.close();
      await up.close();
    }
  });
});
