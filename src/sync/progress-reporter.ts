import type { Logger } from '../util/logger.js';
import type { Progress } from './run-sync.js';

/** Receives the `onProgress` calls of runs (see `runSync`) and shows them; `done()` ends the display. */
export interface ProgressReporter {
  update(p: Progress): void;
  done(): void;
}

/** Options of {@link createProgressReporter}. */
export interface ProgressReporterOptions {
  logger: Logger;
  /** Where the TTY line goes (default `process.stderr`). */
  stream?: Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean };
  /** Force the mode; default: a line when `stream` is a TTY, log lines otherwise. */
  tty?: boolean;
  /** Log mode: at most one line per this many ms (`REPORTS_PROGRESS_INTERVAL_MS`, default 5,000). */
  intervalMs?: number;
  /** TTY mode: at most one redraw per this many ms (default 100). */
  redrawMs?: number;
}

/** The figures of a progress report: records, records/s, bytes, page (issue 5 §3). */
export interface ProgressFigures {
  runId: string;
  source: string;
  records: number;
  rejected: number;
  recordsPerSecond: number;
  bytes: number;
  page?: number | undefined;
  elapsedMs: number;
}

/** Records/s and the rest of a {@link Progress}, as logged and shown. */
export function progressFigures(p: Progress): ProgressFigures {
  const seconds = p.elapsedMs / 1000;
  return {
    runId: p.runId,
    source: p.source,
    records: p.counters.recordsRead,
    rejected: p.counters.recordsRejected,
    recordsPerSecond: seconds > 0 ? Math.round(p.counters.recordsRead / seconds) : 0,
    bytes: p.counters.bytesRead,
    page: p.page,
    elapsedMs: p.elapsedMs,
  };
}

/** `ndjson: 120,000 records (4 rejected) · 15,234 records/s · 52.1 MiB · page 3 · 7.9 s` */
export function formatProgress(f: ProgressFigures): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const parts = [
    `${f.source}: ${n(f.records)} records${f.rejected ? ` (${n(f.rejected)} rejected)` : ''}`,
    `${n(f.recordsPerSecond)} records/s`,
    `${(f.bytes / 1024 / 1024).toFixed(1)} MiB`,
  ];
  if (f.page !== undefined) parts.push(`page ${f.page}`);
  parts.push(`${(f.elapsedMs / 1000).toFixed(1)} s`);
  return parts.join(' · ');
}

/**
 * Shows the progress of long syncs (issue 5 §3): on a terminal one line on stderr redrawn in place
 * (carriage return, erase line; the cursor is left at column 0 so a log line written meanwhile starts
 * clean); otherwise an `info` log line `sync progress` with the same figures at most every `intervalMs`.
 * The first log line comes `intervalMs` after a run starts, so short runs log none.
 */
export function createProgressReporter(options: ProgressReporterOptions): ProgressReporter {
  const stream = options.stream ?? process.stderr;
  const tty = options.tty ?? Boolean(stream.isTTY);
  const intervalMs = options.intervalMs ?? 5_000;
  const redrawMs = options.redrawMs ?? 100;
  let lastShown = Number.NEGATIVE_INFINITY;
  let lastRun: string | undefined;
  let drawn = false;

  if (tty) {
    return {
      update(p) {
        const now = Date.now();
        if (p.runId === lastRun && now - lastShown < redrawMs) return;
        lastRun = p.runId;
        lastShown = now;
        drawn = true;
        stream.write(`\r\x1b[2K${formatProgress(progressFigures(p))}\r`);
      },
      done() {
        if (drawn) stream.write('\r\x1b[2K');
        drawn = false;
      },
    };
  }
  return {
    update(p) {
      if (p.runId !== lastRun) {
        lastRun = p.runId;
        lastShown = Date.now() - p.elapsedMs; // the run's start
      }
      const now = Date.now();
      if (now - lastShown < intervalMs) return;
      lastShown = now;
      options.logger.info(progressFigures(p), 'sync progress');
    },
    done() {},
  };
}
