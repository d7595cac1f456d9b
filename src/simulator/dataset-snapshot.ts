import type { RecordIssue } from '../schema/report.js';
import type { Report } from '../schema/wire-format.js';
import { computeStats, type ReportStats } from '../schema/stats.js';
import type { DayCandidate } from './advance.js';

/**
 * One entry of a dataset as its source holds it, before the day-by-day changes are applied.
 * - `report`: a line that validated; `inDatabase` is false for a duplicate id that lost to a newer line
 *   (the export still leaks it, the list/GeoJSON/stats do not show it).
 * - `wart`: a line that did not validate, kept as its raw text (no line terminator) with its 1-based line
 *   number and the validation issues.
 */
export type SourceEntry =
  | { kind: 'report'; report: Report; inDatabase: boolean }
  | { kind: 'wart'; raw: string; line: number; issues: RecordIssue[] };

/** A {@link SourceEntry} at its slot: the 0-based position in the dataset, stable across days. */
export type DatasetEntry = SourceEntry & { slot: number };

/**
 * Where a dataset's entries come from: a loaded NDJSON file (load-dataset.ts) or the on-the-fly generator
 * (generate.ts). A source is immutable; the {@link Dataset} keeps the day-by-day changes as an overlay.
 */
export interface DatasetSource {
  readonly kind: 'file' | 'generated';
  /** Human-readable origin for logs (`file data/sample/reports.ndjson`, `generated n=1000 seed=7`). */
  readonly label: string;
  /** Identifies the base data (content hash of a file; `n` and seed of a generated set). Part of the version. */
  readonly fingerprint: string;
  /** Number of base slots. */
  readonly count: number;
  /** The simulated "now" of the base state, epoch ms (no base timestamp is later). */
  readonly nowMs: number;
  /** Extra CSV columns (union of `extra` keys, first seen first), fixed for the source. */
  readonly extraColumns: readonly string[];
  /** The entry at a base slot (`0 <= slot < count`). */
  entry(slot: number): SourceEntry;
  /** Status of a base slot that is in the database, or `null` (wart, shadowed duplicate). Cheap: no full record. */
  statusAt(slot: number): string | null;
  /** Destination of a base slot that is in the database, or `null`. Cheap: no full record. */
  destinationAt(slot: number): string | null;
  /** The base slots in the database, newest first (`createdAt` desc, then `id` asc). */
  newestFirst(): Iterable<number>;
  /** The base slot of a report id in the database, if any. */
  slotOfId(id: string): number | undefined;
  /** Other base slots carrying the same id as `slot` (shadowed duplicates), which disappear with it. */
  sameIdSlots(slot: number): readonly number[];
  /**
   * Reports created on simulated day `day`, i.e. in `[fromMs, toMs)`, as `SUBMITTED` with increasing
   * `createdAt` later than every earlier report; `firstSlot` is the slot the first one will take.
   */
  newReports(seed: number, day: number, fromMs: number, toMs: number, firstSlot: number): Report[];
}

/** A filter of the list and GeoJSON endpoints: both given = AND (docs/upstream-contract.md rule 1). */
export interface ReportFilter {
  destination?: string | undefined;
  status?: string | undefined;
}

export interface Change {
  status: string;
  updatedAt: string;
}

/** The parts of a data state that days change; replaced whole, never mutated once published. */
export interface StateParts {
  day: number;
  nowMs: number;
  added: readonly Report[];
  changes: ReadonlyMap<number, Change>;
  unpublished: ReadonlySet<number>;
  unpublishedSorted: readonly number[];
}

/**
 * One immutable data state of a {@link Dataset}: what every response reads. A request takes the snapshot
 * once, so its validators and its body always describe the same state even when days advance while an
 * export is still streaming.
 *
 * The upstream's database holds the valid reports; its export job also leaks the warts (docs/architecture.md):
 * - {@link exportEntries} (NDJSON/CSV) gives every entry, warts included, in slot order;
 * - {@link query}, {@link queryAll}, {@link stats} see only published reports that are in the database.
 */
export class DatasetSnapshot {
  readonly #source: DatasetSource;
  readonly #seed: number;
  readonly #s: StateParts;
  #stats: ReportStats | null = null;
  #addedIds: Map<string, number> | null = null;

  /** @internal Built by {@link Dataset}. */
  constructor(source: DatasetSource, seed: number, parts: StateParts) {
    this.#source = source;
    this.#seed = seed;
    this.#s = parts;
  }

  /** Stable identifier of the data state (same source, seed and day = same version). Used for `ETag`. */
  get version(): string {
    return `${this.#source.fingerprint}-s${this.#seed}-d${this.#s.day}`;
  }

  /** When this state came to be: the simulated "now", whole seconds. Used for `Last-Modified`. */
  get lastModified(): Date {
    return new Date(Math.floor(this.#s.nowMs / 1000) * 1000);
  }

  /** The simulated "now" in epoch ms. */
  get nowMs(): number {
    return this.#s.nowMs;
  }

  /** Days advanced since the dataset was created. */
  get day(): number {
    return this.#s.day;
  }

  /** Number of slots (base + created by days), published or not. */
  get slotCount(): number {
    return this.#source.count + this.#s.added.length;
  }

  /** Number of entries the export serves (warts included, unpublished excluded). */
  get exportCount(): number {
    return this.slotCount - this.#s.unpublished.size;
  }

  /** Extra CSV columns after `CSV_COLUMNS`: fixed for the source, so stable across days. */
  get extraColumns(): readonly string[] {
    return this.#source.extraColumns;
  }

  /** The entry at a slot with the day-by-day changes applied (also for unpublished slots). */
  entryAt(slot: number): DatasetEntry {
    // Built field by field: object spread costs more than the rest of an export line (measured).
    const base: SourceEntry =
      slot < this.#source.count
        ? this.#source.entry(slot)
        : { kind: 'report', report: this.#s.added[slot - this.#source.count] as Report, inDatabase: true };
    if (base.kind === 'wart')
      return { kind: 'wart', slot, raw: base.raw, line: base.line, issues: base.issues };
    const change = this.#s.changes.size === 0 ? undefined : this.#s.changes.get(slot);
    const report = change
      ? { ...base.report, status: change.status, updatedAt: change.updatedAt }
      : base.report;
    return { kind: 'report', slot, report, inDatabase: base.inDatabase };
  }

  /** True when the slot was unpublished by a simulated day. */
  isUnpublished(slot: number): boolean {
    return this.#s.unpublished.has(slot);
  }

  /**
   * The export: `count` entries from 0-based export position `from`, every entry in slot order (warts
   * included, unpublished left out). `rotation` starts the whole sequence `rotation` positions later and
   * wraps around (the "regenerated export" fault: same records, different body).
   */
  *exportEntries(from = 0, count = Number.POSITIVE_INFINITY, rotation = 0): Generator<DatasetEntry> {
    const total = this.exportCount;
    if (total === 0 || from >= total) return;
    const wanted = Math.min(count, total - from);
    const start = (from + (rotation % total)) % total;
    const first = Math.min(wanted, total - start);
    yield* this.#exportRange(start, first);
    if (wanted > first) yield* this.#exportRange(0, wanted - first);
  }

  *#exportRange(position: number, count: number): Generator<DatasetEntry> {
    const { unpublished } = this.#s;
    let slot = this.#slotAtPosition(position);
    const end = this.slotCount;
    for (let n = 0; n < count && slot < end; slot++) {
      if (unpublished.has(slot)) continue;
      n++;
      yield this.entryAt(slot);
    }
  }

  /** The slot of the entry at 0-based export position `position` (binary search over unpublished slots). */
  #slotAtPosition(position: number): number {
    const u = this.#s.unpublishedSorted;
    if (u.length === 0) return position;
    // Smallest s with (published slots in [0, s]) > position.
    let lo = position;
    let hi = position + u.length;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (mid + 1 - lowerBound(u, mid + 1) > position) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** Published reports in the database, in export (slot) order. */
  *published(): Generator<Report> {
    for (let slot = 0; slot < this.slotCount; slot++) {
      if (!this.#inDatabase(slot)) continue;
      const entry = this.entryAt(slot);
      if (entry.kind === 'report') yield entry.report;
    }
  }

  /**
   * One page of the list: published reports matching `filter`, newest first (`createdAt` desc, then `id`
   * asc; docs/sources.md), skipping `offset` matches and returning at most `limit`. Filters are checked on the
   * cheap status/destination of a slot, so a deep page costs no full records.
   */
  query(filter: ReportFilter, offset: number, limit: number): Report[] {
    const out: Report[] = [];
    let skipped = 0;
    for (const slot of this.#matchingNewestFirst(filter)) {
      if (skipped < offset) {
        skipped++;
        continue;
      }
      if (out.length >= limit) break;
      out.push(this.#reportAt(slot));
    }
    return out;
  }

  /** Every published report matching `filter`, newest first, lazily (the GeoJSON endpoint streams this). */
  *queryAll(filter: ReportFilter): Generator<Report> {
    for (const slot of this.#matchingNewestFirst(filter)) yield this.#reportAt(slot);
  }

  /** Counters over the published reports in the database ({@link computeStats}); computed once per state. */
  stats(): ReportStats {
    this.#stats ??= computeStats(this.#cores());
    return this.#stats;
  }

  /** The published report with this id, if the database holds it. */
  getReport(id: string): Report | undefined {
    let slot = this.#source.slotOfId(id);
    if (slot === undefined) {
      this.#addedIds ??= new Map(this.#s.added.map((r, i) => [r.id, this.#source.count + i]));
      slot = this.#addedIds.get(id);
    }
    if (slot === undefined || !this.#inDatabase(slot)) return undefined;
    return this.#reportAt(slot);
  }

  /** @internal The published database slots with their status, for the day planner. */
  *candidates(): Generator<DayCandidate> {
    for (let slot = 0; slot < this.slotCount; slot++) {
      if (this.#inDatabase(slot)) yield { slot, status: this.#statusOf(slot) };
    }
  }

  /** @internal The parts, for {@link Dataset.advanceDays} to derive the next state from. */
  get parts(): StateParts {
    return this.#s;
  }

  #inDatabase(slot: number): boolean {
    if (this.#s.unpublished.has(slot)) return false;
    return slot >= this.#source.count || this.#source.statusAt(slot) !== null;
  }

  #statusOf(slot: number): string {
    const change = this.#s.changes.get(slot);
    if (change) return change.status;
    if (slot >= this.#source.count) return (this.#s.added[slot - this.#source.count] as Report).status;
    return this.#source.statusAt(slot) ?? '';
  }

  #destinationOf(slot: number): string {
    if (slot >= this.#source.count) return (this.#s.added[slot - this.#source.count] as Report).destination;
    return this.#source.destinationAt(slot) ?? '';
  }

  #reportAt(slot: number): Report {
    const entry = this.entryAt(slot);
    if (entry.kind !== 'report') throw new Error(`slot ${slot} holds no report`);
    return entry.report;
  }

  /** Published database slots, newest first: reports created by days (newest last in slot order), then the base. */
  *#newestFirst(): Generator<number> {
    const { unpublished } = this.#s;
    for (let slot = this.slotCount - 1; slot >= this.#source.count; slot--) {
      if (!unpublished.has(slot)) yield slot;
    }
    for (const slot of this.#source.newestFirst()) if (!unpublished.has(slot)) yield slot;
  }

  *#matchingNewestFirst(filter: ReportFilter): Generator<number> {
    const { destination, status } = filter;
    for (const slot of this.#newestFirst()) {
      if (destination !== undefined && this.#destinationOf(slot) !== destination) continue;
      if (status !== undefined && this.#statusOf(slot) !== status) continue;
      yield slot;
    }
  }

  *#cores(): Generator<Pick<Report, 'status' | 'destination'>> {
    for (let slot = 0; slot < this.slotCount; slot++) {
      if (this.#inDatabase(slot))
        yield { status: this.#statusOf(slot), destination: this.#destinationOf(slot) };
    }
  }
}

/** Index of the first element of sorted `values` that is `>= target`. */
function lowerBound(values: readonly number[], target: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((values[mid] as number) < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
