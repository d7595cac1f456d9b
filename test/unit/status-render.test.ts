import stringWidth from 'string-width';
import { describe, expect, it } from 'vitest';
import { renderStatus, type StatusReport } from '../../src/cli/status-report.js';
import { loadConfig } from '../../src/config/config.js';

const config = loadConfig({}, { warehouse: '/data/warehouse.duckdb' });
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

function report(copy: 'live' | 'published'): StatusReport {
  return {
    warehouse: {
      path: copy === 'live' ? '/data/warehouse.duckdb' : '/data/published/warehouse.duckdb',
      copy,
      livePath: '/data/warehouse.duckdb',
      ...(copy === 'published' ? { heldBy: 'reports-sync run (PID 4242)', publishedAt: minutesAgo(47) } : {}),
    },
    timezone: 'UTC',
    schedule: [
      {
        job: 'sync-ndjson',
        schedule: '0 2 * * *',
        scheduleFrom: 'declaration',
        target: 'ndjson',
        nextRun: new Date(Date.now() + 3_600_000).toISOString(),
        lastRun: minutesAgo(50),
        lastStatus: 'succeeded',
        lastSuccess: minutesAgo(50),
      },
      {
        job: 'sync-recent',
        schedule: '*/10 * * * *',
        scheduleFrom: 'declaration',
        target: 'recent',
        nextRun: new Date(Date.now() + 60_000).toISOString(),
      },
    ],
    postgres: null,
    published: {
      path: '/data/published/warehouse.duckdb',
      parquet: '/data/published/parquet',
      writtenAt: minutesAgo(47),
    },
    runs: [
      {
        run_id: '20261125T220630587Z-ndjson-b72299',
        job: 'sync-ndjson',
        status: 'failed',
        started: minutesAgo(50),
        seconds: 1.5,
        read: 300000,
        loaded: 0,
        rejected: 0,
        inserted: 0,
        updated: 0,
        unchanged: 0,
        removed: 0,
        error: `HTTP 500 from https://reports.example.org/api/v1/public/reports.ndjson: ${'x'.repeat(150)}`,
      },
    ],
    drift: [],
    qualityFlags: [],
    reportsByDestinationAndStatus: [{ destination: 'ROAD_CONTROL', status: 'SUBMITTED', reports: 1234567 }],
    totals: { current: 1234567, removed: 0, versions: 1300000, rejected_records: 6 },
  };
}

describe('status as text', () => {
  it('read from the published copy: says how old it is and whose the live file is, and a job without a run in it is "none in the copy", not "never"', () => {
    const text = renderStatus(report('published'), config);
    expect(text).toContain(
      'Warehouse: the published copy /data/published/warehouse.duckdb, written 47 min ago: runs after that are not shown.',
    );
    expect(text).toContain('is in use by reports-sync run (PID 4242)');
    expect(text).toMatch(/^sync-recent .*none in the copy +none in the copy/m);
    expect(text).not.toMatch(/\bnever\b/);
    expect(renderStatus(report('live'), config)).toMatch(/^sync-recent .*never +never/m);
  });

  it('fits the terminal: no line wider than it, the error of a run whole below the table, counts as 1,234,567', () => {
    for (const width of [80, 120]) {
      const text = renderStatus(report('published'), config, width);
      for (const line of text.split('\n')) expect(stringWidth(line), line).toBeLessThanOrEqual(width);
      expect(text).toMatch(/^Errors of these runs:\n {2}20261125T220630587Z-ndjson-b72299: HTTP 500 from/m);
      expect(text.replace(/\s+/g, '')).toContain('x'.repeat(150));
      expect(text).toContain('1,234,567');
      expect(text).toContain('20261125T220630587Z-ndjson-b72299  failed');
    }
  });
});
