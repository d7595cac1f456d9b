import type { Report } from '../schema/wire-format.js';
import { DAY_MS, planDay } from './advance.js';
import type { ReportStats } from '../schema/stats.js';
import {
  DatasetSnapshot,
  type DatasetEntry,
  type DatasetSource,
  type ReportFilter,
} from './dataset-snapshot.js';

/** What {@link Dataset.advanceDays} changed, summed over the days, and the resulting state. */
export interface AdvanceSummary {
  /** Days advanced since the dataset was created. */
  day: number;
  version: string;
  /** The new simulated "now" (ISO 8601). */
  now: string;
  moved: number;
  added: number;
  unpublished: number;
}

/**
 * The data the simulated upstream holds, and its history: a source (file or generator) plus the changes of
 * simulated days, published as a new immutable {@link DatasetSnapshot} per day. The read methods here
 * delegate to the current snapshot; a server request takes {@link snapshot} once and reads only that.
 *
 * Memory: a generated source derives every entry from `(seed, slot)`; the dataset itself only stores what
 * days changed (status moves, unpublished slots, reports created after the base), so a 4,000,000-report
 * dataset costs kilobytes until it is advanced.
 */
export class Dataset {
  readonly kind: 'file' | 'generated';
  /** Seed of every random decision (generation, {@link advanceDays}). */
  readonly seed: number;
  /** Human-readable origin, for logs. */
  readonly label: string;
  readonly #source: DatasetSource;
  #current: DatasetSnapshot;

  constructor(source: DatasetSource, seed: number) {
    this.#source = source;
    this.kind = source.kind;
    this.label = source.label;
    this.seed = seed;
    this.#current = new DatasetSnapshot(source, seed, {
      day: 0,
      nowMs: source.nowMs,
      added: [],
      changes: new Map(),
      unpublished: new Set(),
      unpublishedSorted: [],
    });
  }

  /** The current data state; it never changes (days publish a new one). */
  snapshot(): DatasetSnapshot {
    return this.#current;
  }

  /** Version of the current state (see {@link DatasetSnapshot.version}). */
  get version(): string {
    return this.#current.version;
  }

  /** `Last-Modified` of the current state. */
  get lastModified(): Date {
    return this.#current.lastModified;
  }

  /** Days advanced since creation. */
  get day(): number {
    return this.#current.day;
  }

  /** Entries the current export serves. */
  get exportCount(): number {
    return this.#current.exportCount;
  }

  /** Extra CSV columns (fixed for the source). */
  get extraColumns(): readonly string[] {
    return this.#current.extraColumns;
  }

  /** {@link DatasetSnapshot.exportEntries} of the current state (bound now, not at the first `next()`). */
  exportEntries(from?: number, count?: number, rotation?: number): Generator<DatasetEntry> {
    return this.#current.exportEntries(from, count, rotation);
  }

  /** {@link DatasetSnapshot.published} of the current state. */
  published(): Generator<Report> {
    return this.#current.published();
  }

  /** {@link DatasetSnapshot.query} on the current state. */
  query(filter: ReportFilter, offset: number, limit: number): Report[] {
    return this.#current.query(filter, offset, limit);
  }

  /** {@link DatasetSnapshot.queryAll} on the current state. */
  queryAll(filter: ReportFilter): Generator<Report> {
    return this.#current.queryAll(filter);
  }

  /** {@link DatasetSnapshot.stats} of the current state. */
  stats(): ReportStats {
    return this.#current.stats();
  }

  /** {@link DatasetSnapshot.getReport} in the current state. */
  getReport(id: string): Report | undefined {
    return this.#current.getReport(id);
  }

  /**
   * Moves the data `days` simulated days forward (docs/architecture.md), one day at a time: the day's status moves
   * and unpublishing ({@link planDay}, deterministic by seed), then the day's new reports (from the
   * source). Each day publishes a new snapshot with a new version, and so a new export `ETag`.
   *
   * @throws RangeError when `days` is not a non-negative integer
   */
  advanceDays(days: number): AdvanceSummary {
    if (!Number.isInteger(days) || days < 0)
      throw new RangeError(`days must be a non-negative integer, got ${days}`);
    let moved = 0;
    let added = 0;
    let unpublished = 0;
    for (let i = 0; i < days; i++) {
      const prev = this.#current;
      const p = prev.parts;
      const day = p.day + 1;
      const fromMs = p.nowMs;
      const toMs = fromMs + DAY_MS;
      const plan = planDay(this.seed, day, fromMs, prev.candidates());
      // Copy on write: requests still reading the previous snapshot keep seeing it whole.
      const gone = new Set(p.unpublished);
      for (const slot of plan.unpublish) {
        gone.add(slot);
        if (slot < this.#source.count) for (const same of this.#source.sameIdSlots(slot)) gone.add(same);
      }
      const changes = new Map(p.changes);
      for (const move of plan.moves) {
        changes.set(move.slot, { status: move.status, updatedAt: new Date(move.updatedAtMs).toISOString() });
      }
      const fresh = this.#source.newReports(this.seed, day, fromMs, toMs, prev.slotCount);
      this.#current = new DatasetSnapshot(this.#source, this.seed, {
        day,
        nowMs: toMs,
        added: [...p.added, ...fresh],
        changes,
        unpublished: gone,
        unpublishedSorted: [...gone].sort((a, b) => a - b),
      });
      unpublished += plan.unpublish.length;
      moved += plan.moves.length;
      added += fresh.length;
    }
    const now = this.#current;
    return {
      day: now.day,
      version: now.version,
      now: new Date(now.nowMs).toISOString(),
      moved,
      added,
      unpublished,
    };
  }
}
