import { emptyCounters, type MergeFigures, type RunCounters } from '../warehouse/run-counters.js';
import type { CheckpointInfo } from '../warehouse/staging.js';
import type { ExportInfo, ReadOutcome, SourceItem } from './export-source.js';
import type { ResumePoint } from './resume-run.js';

/**
 * The state of one run, owned here and nowhere else: its counters, the export it read (and whether that
 * was saved to `sync_runs`), how the read ended, the last checkpoint (page end) and the attempt number.
 * The runner feeds it the source's items ({@link apply}) and starts it over when the export is read again;
 * the staging writer's refusals ({@link refused}), the failure path's unstored rejects ({@link unstored})
 * and a committed merge's figures ({@link mergeCommitted}) are the only other changes of its counters.
 */
export class RunState {
  counters: RunCounters = emptyCounters();
  exportInfo: ExportInfo | undefined;
  /** The export's validator is in `sync_runs` (saved before the first batch, so a resume can check it). */
  exportInfoSaved = false;
  outcome: ReadOutcome = { complete: true };
  /** The export answered 304 to the run's conditional request: nothing was read. */
  notModified = false;
  attempts = 0;
  /** Current page of a paged export. */
  page: number | undefined;
  /** The last page end seen: where the next batch's checkpoint says a resumed run goes on. */
  lastMark: (CheckpointInfo & { page: number }) | undefined;
  /** Attempts of this run that found the export changed while they read it (`EXPORT_CHANGED`). */
  exportChanges = 0;
  /** What the run is doing: reading (and staging) its export, or merging it (the failure message says it). */
  phase: 'reading' | 'merging' = 'reading';

  /** Starts attempt `attempt`; from the second on, everything read before is forgotten (docs/how-a-sync-works.md). */
  startAttempt(attempt: number): void {
    this.attempts = attempt;
    this.outcome = { complete: true };
    this.notModified = false;
    this.page = undefined;
    this.lastMark = undefined;
    if (attempt === 1) return;
    this.counters = emptyCounters();
    this.exportInfo = undefined;
    this.exportInfoSaved = false;
  }

  /** Adopts an interrupted run's committed pages: its counters and page; its validator is already saved. */
  resume(point: ResumePoint): void {
    this.counters = { ...point.counters };
    this.page = point.page;
    this.exportInfoSaved = true;
  }

  /** Counts one item of the source (blocks, bytes, the export's answer or its 304, page ends). */
  apply(item: SourceItem): void {
    const c = this.counters;
    switch (item.kind) {
      case 'block':
        c.recordsRead += item.block.read;
        c.recordsLoaded += item.block.loaded;
        c.recordsRejected += item.block.rejected;
        return;
      case 'bytes':
        c.bytesRead += item.read;
        c.bytesWire += item.wire ?? 0;
        return;
      case 'export':
        this.exportInfo = item.info;
        return;
      case 'not-modified':
        this.notModified = true; // its exportInfo holds the run's validators (read-export.ts)
        return;
      case 'checkpoint':
        this.page = item.page;
        c.pages = item.page;
        this.lastMark = { page: item.page, nextUrl: item.nextUrl };
        return;
    }
  }

  /** `records` staged rows DuckDB refused were quarantined instead: loaded becomes rejected. */
  refused(records: number): void {
    this.counters.recordsLoaded -= records;
    this.counters.recordsRejected += records;
  }

  /** `records` rejects counted could not be stored with a failed run's log: they are not counted. */
  unstored(records: number): void {
    this.counters.recordsRejected -= records;
  }

  /** The counters as they are once `figures` (a merge's, not committed yet) count too. */
  withMerge(figures: MergeFigures): RunCounters {
    return { ...this.counters, ...figures };
  }

  /** Folds the figures of a merge into the counters; call only once its transaction committed. */
  mergeCommitted(figures: MergeFigures): void {
    Object.assign(this.counters, figures);
  }

  /** The export was read to its end. */
  get complete(): boolean {
    return this.outcome.complete;
  }

  /** Why the export is incomplete, when it is. */
  get incompleteReason(): string | undefined {
    return this.outcome.complete ? undefined : this.outcome.reason;
  }

  /** Why the export, though complete, cannot be proven consistent. */
  get tombstonesBlocked(): string | undefined {
    return this.outcome.complete ? this.outcome.tombstonesBlocked : undefined;
  }
}
