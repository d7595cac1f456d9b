import type { Logger } from '../util/logger.js';
import type { StatusLine } from '../util/status-line.js';
import type { Progress } from './run-sync.js';

/** Receives the progress of runs (see `runSync`'s `onProgress`) and shows it; `done()` ends the display. */
export interface ProgressReporter {
  update(p: Progress): void;
  /** The run's export is read to its end and its merge starts (`records` staged records). */
  merging(runId: string, records: number): void;
  /** The upstream's record count (its `/stats` total) when known: adds a percentage and an ETA. */
  setTotal(total: number | undefined): void;
  done(): void;
}

/** Options of {@link createProgressReporter}. */
export interface ProgressReporterOptions {
  logger: Logger;
  /** Terminal mode: the status line to draw on (the logger writes through the same one). */
  line?: StatusLine | undefined;
  /** Log mode: at most one line per this many ms (`REPORTS_PROGRESS_INTERVAL_MS`, default 5,000). */
  intervalMs?: number;
  /** Terminal mode: redraw period in ms (default 500), so the line moves between batches too. */
  tickMs?: number;
  /** The clock (ms), for tests. */
  now?: () => number;
}

/** The figures of a progress report. `percent` and `etaMs` only when the upstream total is known. */
export interface ProgressFigures {
  runId: string;
  source: string;
  records: number;
  rejected: number;
  recordsPerSecond: number;
  bytes: number;
  page?: number | undefined;
  elapsedMs: number;
  percent?: number | undefined;
  etaMs?: number | undefined;
}

/**
 * Records/s, and the percentage and ETA against `total`, of a {@link Progress}. `elapsedMs` overrides the
 * progress's own (the counters are read live between two reports). The percentage stays under 100 while
 * records are read (the total may be stale), and is left out when the count is already past it.
 */
export function progressFigures(p: Progress, total?: number, elapsedMs = p.elapsedMs): ProgressFigures {
  const seconds = elapsedMs / 1000;
  const records = p.counters.recordsRead;
  const rate = seconds > 0 ? Math.round(records / seconds) : 0;
  const figures: ProgressFigures = {
    runId: p.runId,
    source: p.source,
    records,
    rejected: p.counters.recordsRejected,
    recordsPerSecond: rate,
    bytes: p.counters.bytesRead,
    page: p.page,
    elapsedMs,
  };
  if (total !== undefined && total > 0 && records <= total) {
    figures.percent = Math.min(99, Math.floor((records / total) * 100));
    if (rate > 0) figures.etaMs = Math.round(((total - records) / rate) * 1000);
  }
  return figures;
}

const n = (x: number) => x.toLocaleString('en-US');

/** `ndjson: 120,000 records (4 rejected) · 42% · 15,234 records/s · 52.1 MiB · page 3 · 7.9 s · ETA 11 s` */
export function formatProgress(f: ProgressFigures): string {
  const parts = [`${f.source}: ${n(f.records)} records${f.rejected ? ` (${n(f.rejected)} rejected)` : ''}`];
  if (f.percent !== undefined) parts.push(`${f.percent}%`);
  parts.push(`${n(f.recordsPerSecond)} records/s`, `${(f.bytes / 1024 / 1024).toFixed(1)} MiB`);
  if (f.page !== undefined) parts.push(`page ${f.page}`);
  parts.push(`${(f.elapsedMs / 1000).toFixed(1)} s`);
  if (f.etaMs !== undefined) parts.push(`ETA ${formatSeconds(f.etaMs)}`);
  return parts.join(' · ');
}

/** `ndjson: merging 1,000,000 records… 3.2 s` */
export function formatMerging(source: string, records: number, elapsedMs: number): string {
  return `${source}: merging ${n(records)} records… ${(elapsedMs / 1000).toFixed(1)} s`;
}

function formatSeconds(ms: number): string {
  const s = Math.ceil(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/**
 * Shows the progress of long syncs.
 * - Terminal mode (`line` given): one status line redrawn every `tickMs` from the last report, its counters
 *   read live (they move between batches) and its elapsed time advanced by the clock; then the merge phase
 *   with its own elapsed time. Log lines go through the same status line, which erases it first.
 * - Log mode: an `info` line `sync progress` with the same figures at most every `intervalMs`, and
 *   `sync merging` when a run that has logged progress starts its merge. The first line comes `intervalMs`
 *   after a run starts, so short runs log none.
 */
export function createProgressReporter(options: ProgressReporterOptions): ProgressReporter {
  const now = options.now ?? Date.now;
  return options.line ? statusLineReporter(options, options.line, now) : logReporter(options, now);
}

/** Status-line mode of {@link createProgressReporter}: one line redrawn every `tickMs`. */
function statusLineReporter(
  options: ProgressReporterOptions,
  line: StatusLine,
  now: () => number,
): ProgressReporter {
  let total: number | undefined;
  let last: { p: Progress; at: number } | undefined;
  let merge: { runId: string; source: string; records: number; at: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  const draw = () => {
    const t = now();
    if (merge) line.set(formatMerging(merge.source, merge.records, t - merge.at));
    else if (last) line.set(formatProgress(progressFigures(last.p, total, last.p.elapsedMs + t - last.at)));
  };
  const start = () => {
    if (timer) return;
    timer = setInterval(draw, options.tickMs ?? 500);
    timer.unref();
  };
  return {
    update(p) {
      if (merge?.runId !== p.runId) merge = undefined;
      last = { p, at: now() };
      start();
      draw();
    },
    merging(runId, records) {
      merge = { runId, source: last?.p.source ?? 'sync', records, at: now() };
      start();
      draw();
    },
    setTotal(value) {
      total = value;
    },
    done() {
      if (timer) clearInterval(timer);
      timer = undefined;
      last = undefined;
      merge = undefined;
      line.clear();
    },
  };
}

/** Log mode of {@link createProgressReporter}: an `info` line at most every `intervalMs`. */
function logReporter(options: ProgressReporterOptions, now: () => number): ProgressReporter {
  const intervalMs = options.intervalMs ?? 5_000;
  let total: number | undefined;
  let lastRun: string | undefined;
  let lastShown = Number.NEGATIVE_INFINITY;
  let logged = false;
  return {
    update(p) {
      if (p.runId !== lastRun) {
        lastRun = p.runId;
        lastShown = now() - p.elapsedMs; // the run's start
        logged = false;
      }
      const t = now();
      if (t - lastShown < intervalMs) return;
      lastShown = t;
      logged = true;
      options.logger.info(progressFigures(p, total), 'sync progress');
    },
    merging(runId, records) {
      if (runId === lastRun && logged) options.logger.info({ runId, records }, 'sync merging');
    },
    setTotal(value) {
      total = value;
    },
    done() {},
  };
}
