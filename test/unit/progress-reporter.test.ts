import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createProgressReporter, formatProgress, progressFigures } from '../../src/sync/progress-reporter.js';
import type { Progress } from '../../src/sync/run-sync.js';
import { emptyCounters } from '../../src/warehouse/run-counters.js';

const progress = (runId: string, records: number, elapsedMs: number, page?: number): Progress => ({
  runId,
  source: 'csv',
  counters: { ...emptyCounters(), recordsRead: records, recordsRejected: 2, bytesRead: 3 * 1024 * 1024 },
  elapsedMs,
  page,
});

function capture() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { chunks, stream };
}

describe('progress reporting', () => {
  it('computes records/s and formats records, rate, bytes and page', () => {
    const f = progressFigures(progress('r1', 120_000, 8_000, 3));
    expect(f).toMatchObject({ records: 120_000, recordsPerSecond: 15_000, bytes: 3 * 1024 * 1024, page: 3 });
    expect(formatProgress(f)).toBe(
      'csv: 120,000 records (2 rejected) · 15,000 records/s · 3.0 MiB · page 3 · 8.0 s',
    );
  });

  it('adds a percentage and an ETA against the upstream total, never 100% while reading', () => {
    const f = progressFigures(progress('r1', 250_000, 10_000), 1_000_000);
    expect(f).toMatchObject({ percent: 25, etaMs: 30_000 });
    expect(formatProgress(f)).toBe(
      'csv: 250,000 records (2 rejected) · 25% · 25,000 records/s · 3.0 MiB · 10.0 s · ETA 30 s',
    );
    expect(progressFigures(progress('r1', 999_999, 10_000), 1_000_000).percent).toBe(99);
    // Past a stale total: no percentage rather than a wrong one.
    expect(progressFigures(progress('r1', 1_000_001, 10_000), 1_000_000).percent).toBeUndefined();
  });

  it('on a terminal redraws between reports from the live counters, then names the merge, and clears', () => {
    vi.useFakeTimers();
    try {
      const shown: string[] = [];
      let cleared = 0;
      const line = { set: (t: string) => shown.push(t), log: () => undefined, clear: () => cleared++ };
      let clock = 0;
      const reporter = createProgressReporter({
        logger: pino({ level: 'silent' }),
        line,
        tickMs: 500,
        now: () => clock,
      });
      const p = progress('r1', 10_000, 1_000);
      reporter.update(p);
      // No new report for 2 s (a batch being read): the counters move and the line follows every tick.
      (p.counters as { recordsRead: number }).recordsRead = 30_000;
      clock += 1_000;
      vi.advanceTimersByTime(1_000);
      reporter.merging('r1', 30_000);
      clock += 1_500;
      vi.advanceTimersByTime(500);
      reporter.done();
      expect(shown[0]).toBe('csv: 10,000 records (2 rejected) · 10,000 records/s · 3.0 MiB · 1.0 s');
      expect(shown).toContain('csv: 30,000 records (2 rejected) · 15,000 records/s · 3.0 MiB · 2.0 s');
      expect(shown.at(-2)).toBe('csv: merging 30,000 records… 0.0 s');
      expect(shown.at(-1)).toBe('csv: merging 30,000 records… 1.5 s');
      expect(cleared).toBe(1);
      // Stopped: no redraw after done().
      const count = shown.length;
      vi.advanceTimersByTime(5_000);
      expect(shown).toHaveLength(count);
    } finally {
      vi.useRealTimers();
    }
  });

  it('elsewhere logs a JSON line with the same figures at most once per interval', () => {
    const log = capture();
    const logger = pino({ level: 'info' }, log.stream);
    const reporter = createProgressReporter({ logger, intervalMs: 60_000 });
    reporter.update(progress('r1', 1_000, 100)); // 100 ms into the run: too early
    reporter.update(progress('r2', 900_000, 61_000, 7)); // a new run 61 s in: logs
    reporter.update(progress('r2', 901_000, 61_100, 7)); // 100 ms later: skipped
    const lines = log.chunks.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'sync progress',
      runId: 'r2',
      source: 'csv',
      records: 900_000,
      recordsPerSecond: 14_754,
      bytes: 3 * 1024 * 1024,
      page: 7,
    });
  });
});
