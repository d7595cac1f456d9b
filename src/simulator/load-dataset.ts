import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { RECORD_ISSUE_CODES } from '../schema/record-issue.js';
import type { Report } from '../schema/wire-format.js';
import { validateWireLine } from '../schema/wire-line.js';
import { SyncError } from '../util/errors.js';
import { DAILY_RATES, DAY_MS } from './advance.js';
import { Dataset } from './dataset.js';
import type { DatasetSource, SourceEntry } from './dataset-snapshot.js';
import { GENERATED_NOW_MS, syntheticReport } from './generate.js';
import { hash32 } from './seeded-random.js';
import { compareCodePoints } from '../util/code-point-order.js';

/** Options of {@link loadDataset}. */
export interface LoadDatasetOptions {
  /** Seed of {@link Dataset.advanceDays} and of the reports days add (default 1). */
  seed?: number;
}

/**
 * Loads an NDJSON dataset file (the wire shape of docs/sources.md, one object per line) into a {@link Dataset}.
 *
 * Each non-blank line becomes an entry, in file order: a line that passes `validateWireReport` is a report
 * of the upstream's database; any other line (not JSON, missing id, impossible coordinate, unparseable date)
 * is a wart that only the exports leak, as its raw text. A UTF-8 BOM and `\r` before `\n` are stripped;
 * blank lines are skipped (they are not entries). When an id occurs on several valid lines, the database
 * holds the one with the latest `updatedAt` (the last of equals); the others are exported but not listed.
 *
 * The simulated "now" is the latest `createdAt`/`updatedAt` in the file. Reports added by
 * `advanceDays` (2 % of the valid reports a day, at least one) get ids `SIM-<day>-<k>`, the destination
 * and category of a report of the file, synthetic text and location, and no extra fields.
 *
 * @throws SyncError `DATASET_NOT_FOUND` (exit 2) when the file cannot be read
 */
export async function loadDataset(path: string, options: LoadDatasetOptions = {}): Promise<Dataset> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new SyncError(
      'DATASET_NOT_FOUND',
      `Cannot read the dataset file ${path}: ${(cause as Error).message}`,
      { cause, context: { path } },
    );
  }
  const fingerprint = `file-${createHash('sha1').update(text).digest('hex').slice(0, 12)}`;
  return new Dataset(new FileSource(`file ${path}`, fingerprint, parseLines(text)), options.seed ?? 1);
}

/** Parses the lines of an NDJSON text into entries (exported for tests that build datasets from strings). */
export function parseLines(text: string): SourceEntry[] {
  const entries: SourceEntry[] = [];
  const lines = text.replace(/^\uFEFF/, '').split('\n');
  lines.forEach((rawLine, index) => {
    const raw = rawLine.endsWith('\r') ? rawLine.slice(0, -1) : rawLine;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      entries.push({
        kind: 'wart',
        raw,
        line: index + 1,
        issues: [
          {
            path: '',
            message: `not JSON: ${(err as Error).message}`,
            code: RECORD_ISSUE_CODES.malformedJson,
          },
        ],
      });
      return;
    }
    const result = validateWireLine(raw, value);
    if (result.ok) entries.push({ kind: 'report', report: result.report, inDatabase: true });
    else entries.push({ kind: 'wart', raw, line: index + 1, issues: result.issues });
  });
  return entries;
}

/** A dataset held in memory: fine for sample files (thousands of lines); use the generator for benchmarks. */
class FileSource implements DatasetSource {
  readonly kind = 'file';
  readonly label: string;
  readonly fingerprint: string;
  readonly count: number;
  readonly nowMs: number;
  readonly extraColumns: readonly string[];
  readonly #entries: SourceEntry[];
  readonly #byId = new Map<string, number>();
  readonly #slotsById = new Map<string, number[]>();
  readonly #newestFirst: number[];
  readonly #databaseCount: number;

  constructor(label: string, fingerprint: string, entries: SourceEntry[]) {
    this.label = label;
    this.fingerprint = fingerprint;
    this.#entries = entries;
    this.count = entries.length;
    const extra = new Set<string>();
    entries.forEach((entry, slot) => {
      if (entry.kind !== 'report') return;
      const { report } = entry;
      for (const key of Object.keys(report.extra ?? {})) extra.add(key);
      const slots = this.#slotsById.get(report.id) ?? [];
      slots.push(slot);
      this.#slotsById.set(report.id, slots);
      const winner = this.#byId.get(report.id);
      // Latest updatedAt wins, the last of equals: the rule the warehouse merge applies (docs/how-a-sync-works.md).
      if (winner === undefined || report.updatedAt >= this.#reportOf(winner).updatedAt) {
        if (winner !== undefined) this.#shadow(winner);
        this.#byId.set(report.id, slot);
      } else {
        this.#shadow(slot);
      }
    });
    this.extraColumns = [...extra];
    const inDb = [...this.#byId.values()];
    this.#databaseCount = inDb.length;
    this.#newestFirst = inDb.sort((a, b) => compareNewestFirst(this.#reportOf(a), this.#reportOf(b)));
    let now = Number.NEGATIVE_INFINITY;
    for (const slot of inDb) {
      const r = this.#reportOf(slot);
      now = Math.max(now, Date.parse(r.createdAt), Date.parse(r.updatedAt));
    }
    this.nowMs = Number.isFinite(now) ? now : GENERATED_NOW_MS;
  }

  #reportOf(slot: number): Report {
    const entry = this.#entries[slot];
    if (entry?.kind !== 'report') throw new Error(`slot ${slot} holds no report`);
    return entry.report;
  }

  #shadow(slot: number): void {
    const entry = this.#entries[slot];
    if (entry?.kind === 'report') this.#entries[slot] = { ...entry, inDatabase: false };
  }

  entry(slot: number): SourceEntry {
    const entry = this.#entries[slot];
    if (entry === undefined) throw new RangeError(`slot ${slot} is outside the dataset`);
    return entry;
  }

  statusAt(slot: number): string | null {
    const entry = this.#entries[slot];
    return entry?.kind === 'report' && entry.inDatabase ? entry.report.status : null;
  }

  destinationAt(slot: number): string | null {
    const entry = this.#entries[slot];
    return entry?.kind === 'report' && entry.inDatabase ? entry.report.destination : null;
  }

  newestFirst(): Iterable<number> {
    return this.#newestFirst;
  }

  slotOfId(id: string): number | undefined {
    return this.#byId.get(id);
  }

  sameIdSlots(slot: number): readonly number[] {
    const entry = this.#entries[slot];
    if (entry?.kind !== 'report') return [];
    return (this.#slotsById.get(entry.report.id) ?? []).filter((s) => s !== slot);
  }

  newReports(seed: number, day: number, fromMs: number, _toMs: number, firstSlot: number): Report[] {
    const count = Math.max(1, Math.round(this.#databaseCount * DAILY_RATES.newShareOfFile));
    const out: Report[] = [];
    for (let k = 0; k < count; k++) {
      // Evenly spread over the day, whole seconds, strictly increasing and after every earlier timestamp.
      const createdAtMs = Math.floor((fromMs + ((k + 1) * DAY_MS) / (count + 1)) / 1000) * 1000;
      // Destination and category of a report of the file, so new reports speak the file's codes.
      const template = this.#newestFirst[hash32(seed, day, k) % Math.max(1, this.#newestFirst.length)];
      const like = template === undefined ? undefined : this.#reportOf(template);
      out.push(
        syntheticReport(seed, firstSlot + k, {
          id: `SIM-${day}-${k + 1}`,
          status: 'SUBMITTED',
          ...(like ? { destination: like.destination, category: like.category } : {}),
          createdAtMs,
          updatedAtMs: createdAtMs,
          extras: false,
        }),
      );
    }
    return out;
  }
}

/**
 * `createdAt` desc, then `id` asc by code point (docs/sources.md), as the reader's SQL orders them.
 * Timestamps are canonical ISO strings, so text order is time order.
 */
export function compareNewestFirst(a: Report, b: Report): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? 1 : -1;
  return compareCodePoints(a.id, b.id);
}
