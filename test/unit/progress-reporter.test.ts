import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
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

  it('on a terminal redraws one line in place and erases it when done', () => {
    const out = capture();
    const tty = Object.assign(out.stream, { isTTY: true });
    const reporter = createProgressReporter({ logger: pino({ level: 'silent' }), stream: tty, redrawMs: 0 });
    reporter.update(progress('r1', 10_000, 1_000));
    reporter.update(progress('r1', 20_000, 2_000, 2));
    reporter.done();
    expect(out.chunks).toEqual([
      '\r\x1b[2Kcsv: 10,000 records (2 rejected) · 10,000 records/s · 3.0 MiB · 1.0 s\r',
      '\r\x1b[2Kcsv: 20,000 records (2 rejected) · 10,000 records/s · 3.0 MiB · page 2 · 2.0 s\r',
      '\r\x1b[2K',
    ]);
    expect(out.chunks.join('')).not.toContain('\n');
  });

  it('elsewhere logs a JSON line with the same figures at most once per interval', () => {
    const log = capture();
    const logger = pino({ level: 'info' }, log.stream);
    const reporter = createProgressReporter({ logger, tty: false, intervalMs: 60_000 });
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
