import { upstreamReading } from '../schema/upstream-reading.js';
import { hash } from 'node:crypto';
import xxhash, { type XXHashAPI } from 'xxhash-wasm';
import { DEFAULT_EXTRA_LIMITS, type ExtraLimits } from '../schema/value-rules.js';

// xxHash64 (WebAssembly, instantiated once per thread): ~0.3 µs for a 460-byte line where SHA-1 through
// node:crypto took ~1.6–2.2 µs, the largest cost of a no-change re-sync.
let hasher: XXHashAPI | undefined;
let loading: Promise<XXHashAPI> | undefined;

/**
 * Instantiates the line hasher (xxHash64 in WebAssembly) for this thread; idempotent. Every way to get a
 * {@link KnownLines} calls it, except {@link KnownLines.fromState}, whose thread must call it first. Not a
 * top-level `await`: Node 20's V8 aborted a test process on one ("Check failed: (location_) != nullptr").
 */
export async function loadLineHasher(): Promise<void> {
  hasher ??= await (loading ??= xxhash());
}

/**
 * Bumped whenever a change to parsing or validation could load the same line differently: every stored
 * line hash then stops matching, and the next run validates every record again.
 */
// 2: xxHash64 instead of SHA-1 cut to 64 bits; 3: location keys kept, CR never left in a CSV cell;
// 4: a CSV id `17.0` read as 17, required fields missing told apart; 5: the NDJSON fast lane leaves a key
// naming a modelled field in another style (`Lat`) to the general path, which reads it as that field, and
// Open311's `long` is a longitude (it was an unknown field); 6: a GeoJSON Point with an altitude is a
// location, a location's other keys keep their number text, unknown fields are bounded by their stored
// text, negative integer ids, longer timestamp fractions and more coordinate spellings are read.
const RULES_VERSION = 6;

/** A {@link KnownLines} set as passed to a worker thread (its tables are shared memory). */
export interface KnownLinesState {
  source: string;
  /** The unknown-field limits the lines are read within, mixed into every line hash ({@link limitsContext}). */
  limits: string;
  size: number;
  /** log2 of the number of buckets. */
  bits: number;
  start: SharedArrayBuffer;
  lo: SharedArrayBuffer;
  mid: SharedArrayBuffer;
  /** The set's seen marks, when it tracks them ({@link KnownLines.tracksSeen}). */
  marks?: { seen: SharedArrayBuffer; read: SharedArrayBuffer } | undefined;
}

/** The outcome of {@link KnownLines.check}: the line's 64-bit hash, and whether a current report came from it. */
export interface LineCheck {
  /** Signed 64-bit hash of the raw line (what `reports.line_hash` stores). */
  hash: bigint;
  known: boolean;
}

/** Fewest bucket bits: the part of the high half a bucket does not fix must fit 16 bits. */
const MIN_BITS = 16;

/**
 * The raw-line hashes of the warehouse's current reports, loaded once per run, so a re-sync skips
 * unchanged records before JSON.parse, validation and staging (a no-change re-sync cost as much
 * as the first load). A line whose hash is known produced, byte for byte, a report that is current and
 * not tombstoned; the run only marks it read in the set ({@link tracksSeen}) or stages its hash
 * (`staging_seen`), so the merge counts that report seen.
 *
 * A hash is xxHash64 of the line's UTF-8 bytes, seeded by the source, the export's header (CSV column order
 * changes what a row means), {@link RULES_VERSION}, the reading settings and the unknown-field limits. Two different lines share a hash with probability
 * ~2^-64 per pair (with 4M lines ~4e-7 for any pair): such a changed line would be taken as unchanged until
 * it changes again. It is no defence against lines crafted to collide, and neither was a 64-bit cut of
 * SHA-1 (2^32 work); the upstream is trusted for its own records' identity anyway.
 *
 * The set is the one part of a sync's memory that grows with the warehouse, so it is packed: the hashes
 * are cut into 2^bits buckets by their top bits (about 8 hashes a bucket, at least 2^16 buckets); a bucket
 * stores only the bits its number does not fix (the low 32 bits and up to 16 more), and one 32-bit offset
 * per bucket says where it starts. About 6.8 bytes a report: 68 MiB for 10M reports (an open-addressing
 * table of 2–4 slots of 9 bytes per report took 302 MiB), and every hash is still compared on all 64 bits.
 * A set that tracks the lines read takes 4 bytes a report more (the line each was read at): 103 MiB at 10M.
 */
export class KnownLines {
  readonly #start: Uint32Array;
  readonly #lo: Int32Array;
  readonly #mid: Uint16Array;
  readonly #bits: number;
  readonly #shift: number;
  readonly #midMask: number;
  readonly #source: string;
  readonly #limits: string;
  /** Per hash, the largest line number it was read at (0: not read), when the set tracks seen lines. */
  readonly #seen: Uint32Array | undefined;
  /** `[0]`: the known lines read (duplicates included), when the set tracks seen lines. */
  readonly #read: BigInt64Array | undefined;
  #seed = 0n;
  readonly #h64: XXHashAPI['h64'];
  readonly #h64Raw: XXHashAPI['h64Raw'];
  #size: number;

  private constructor(
    source: string,
    capacity: number,
    limits: string,
    shared?: KnownLinesState,
    trackSeen = false,
  ) {
    const bits = shared?.bits ?? bucketBits(capacity);
    const buckets = 2 ** bits;
    // Shared memory, so the decode workers read the same table without a copy.
    this.#start = new Uint32Array(shared?.start ?? new SharedArrayBuffer((buckets + 1) * 4));
    this.#lo = new Int32Array(shared?.lo ?? new SharedArrayBuffer(capacity * 4));
    this.#mid = new Uint16Array(shared?.mid ?? new SharedArrayBuffer(capacity * 2));
    const marks = shared
      ? shared.marks
      : trackSeen
        ? { seen: new SharedArrayBuffer(capacity * 4), read: new SharedArrayBuffer(8) }
        : undefined;
    this.#seen = marks && new Uint32Array(marks.seen);
    this.#read = marks && new BigInt64Array(marks.read);
    this.#bits = bits;
    this.#shift = 32 - bits;
    this.#midMask = 2 ** this.#shift - 1;
    this.#source = source;
    this.#limits = limits;
    this.#size = shared?.size ?? 0;
    if (hasher === undefined) throw new Error('KnownLines: call loadLineHasher() first');
    this.#h64 = hasher.h64;
    this.#h64Raw = hasher.h64Raw;
    this.setContext('');
  }

  /** Number of hashes held. */
  get size(): number {
    return this.#size;
  }

  /** Bytes of the tables (shared memory): what the set costs a run. */
  get bytes(): number {
    const marks = (this.#seen?.byteLength ?? 0) + (this.#read?.byteLength ?? 0);
    return this.#start.byteLength + this.#lo.byteLength + this.#mid.byteLength + marks;
  }

  /** What a worker needs to rebuild this set with {@link fromState} (shared memory, not copied). */
  state(): KnownLinesState {
    return {
      source: this.#source,
      limits: this.#limits,
      size: this.size,
      bits: this.#bits,
      start: this.#start.buffer as SharedArrayBuffer,
      lo: this.#lo.buffer as SharedArrayBuffer,
      mid: this.#mid.buffer as SharedArrayBuffer,
      marks: this.#seen &&
        this.#read && {
          seen: this.#seen.buffer as SharedArrayBuffer,
          read: this.#read.buffer as SharedArrayBuffer,
        },
    };
  }

  /**
   * The set whose {@link state} was passed to this thread (read-only use: {@link check}).
   *
   * @throws Error when this thread has not awaited {@link loadLineHasher}
   */
  static fromState(state: KnownLinesState): KnownLines {
    return new KnownLines(state.source, 0, state.limits, state);
  }

  /**
   * An empty set (nothing is skipped; hashes are still computed for staging), for lines read within
   * `limits` (the run's `REPORTS_EXTRA_MAX_*`: see {@link build}).
   */
  static async empty(source: string, limits: ExtraLimits = DEFAULT_EXTRA_LIMITS): Promise<KnownLines> {
    await loadLineHasher();
    return new KnownLines(source, 0, limitsContext(limits));
  }

  /**
   * The set of the hashes `scan` visits, given as their high and low signed 32-bit halves (the warehouse's
   * current line hashes: warehouse/known-line-hashes.ts). `scan` is called twice and must visit the same
   * `count` hashes, in any order: the first pass counts the hashes of each bucket, the second puts each in
   * its place, so the set is built in its own memory and no sorted copy of the hashes exists anywhere.
   *
   * With `trackSeen`, the set also records which of its hashes were read and at which line
   * ({@link tracksSeen}: 4 more bytes a hash).
   *
   * `limits` are the unknown-field limits the run reads its lines within (`REPORTS_EXTRA_MAX_*`): they are
   * part of a line's hash, since a line stored under larger limits may be quarantined under smaller ones.
   *
   * @throws Error when the passes visit another number of hashes than `count` (the hashes changed between them)
   */
  static async build(
    source: string,
    count: number,
    scan: (visit: (hi: number, lo: number) => void) => Promise<void>,
    trackSeen = false,
    limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
  ): Promise<KnownLines> {
    await loadLineHasher();
    const set = new KnownLines(source, count, limitsContext(limits), undefined, trackSeen);
    await set.#fill(count, scan);
    return set;
  }

  async #fill(
    count: number,
    scan: (visit: (hi: number, lo: number) => void) => Promise<void>,
  ): Promise<void> {
    const start = this.#start;
    let counted = 0;
    // start[b + 1] counts bucket b, then holds where b ends once summed: b begins at start[b].
    await scan((hi) => {
      start[this.#bucket(hi) + 1]!++;
      counted++;
    });
    if (counted !== count) throw new Error(`KnownLines.build: counted ${counted} hashes, expected ${count}`);
    for (let b = 1; b < start.length; b++) start[b]! += start[b - 1]!;
    let placed = 0;
    // Placing a hash moves its bucket's start on, so afterwards start[b] is where b ends (b + 1 begins).
    await scan((hi, lo) => {
      if (++placed > count) return;
      const at = start[this.#bucket(hi)]!++;
      this.#lo[at] = lo;
      this.#mid[at] = hi & this.#midMask;
    });
    if (placed !== count) throw new Error(`KnownLines.build: placed ${placed} hashes, expected ${count}`);
    start.copyWithin(1, 0, start.length - 1);
    start[0] = 0;
    this.#size = count;
  }

  /**
   * Sets what a line's meaning depends on besides its text (the CSV header line; `''` for NDJSON; and the
   * upstream's field names and time zone, `REPORTS_FIELD_NAMES`/`REPORTS_SOURCE_TIME_ZONE`, when set; the
   * set's unknown-field limits, when not the defaults), for the lines checked from now on. Hashes staged with one context never match lines read with another: a
   * changed setting reads every line again.
   */
  setContext(context: string): void {
    const reading = readingContext();
    const key = hash(
      'md5',
      `reports-sync/line-hash/v${RULES_VERSION}\u0000${this.#source}\u0000${context}${reading}${this.#limits}`,
      'buffer',
    );
    this.#seed = key.readBigUInt64LE(0);
  }

  /**
   * Hashes one raw line (without its line break) and looks it up. `text` may be given as its UTF-8 bytes
   * (same hash, no encoding step). When the set {@link tracksSeen} and `line` is given (the line's number,
   * from 1), a known line is marked read at it (the largest number wins when a line repeats).
   */
  check(text: string | Uint8Array, line?: number): LineCheck {
    const h = BigInt.asIntN(
      64,
      typeof text === 'string' ? this.#h64(text, this.#seed) : this.#h64Raw(text, this.#seed),
    );
    const at = this.#find(h);
    // Line numbers past 2^32 - 1 (a 4-billion-line export) share the last mark: order among them is lost.
    if (at >= 0 && line !== undefined && this.#seen) markMax(this.#seen, at, Math.min(line, 0xffffffff));
    return { hash: h, known: at >= 0 };
  }

  /** Whether the set holds `hash` (a signed 64-bit line hash, as {@link check} returns it). */
  has(hash: bigint): boolean {
    return this.#find(hash) >= 0;
  }

  /**
   * Whether the set records the lines read itself (built with `trackSeen`): then a known line needs no
   * staging; the merge asks the set for the hashes not read ({@link unseen}) and the line a hash was read
   * at ({@link lineOf}). Only for an export read whole in one go (NDJSON): a resumed run would not have
   * the marks of the pages it adopted.
   */
  get tracksSeen(): boolean {
    return this.#seen !== undefined;
  }

  /** Adds `lines` known lines read (a block's, counted by its decoder) to {@link knownRead}. */
  countKnown(lines: number): void {
    if (this.#read && lines > 0) Atomics.add(this.#read, 0, BigInt(lines));
  }

  /** Known lines read since the set was built or {@link resetSeen} (0 unless it {@link tracksSeen}). */
  get knownRead(): number {
    return this.#read ? Number(Atomics.load(this.#read, 0)) : 0;
  }

  /** Forgets every line read (a read restarted from the beginning of the export). */
  resetSeen(): void {
    this.#seen?.fill(0);
    if (this.#read) Atomics.store(this.#read, 0, 0n);
  }

  /** The line `hash` was last read at, or 0 when it was not read (or is not in the set). */
  lineOf(hash: bigint): number {
    const at = this.#find(hash);
    return at >= 0 && this.#seen ? Atomics.load(this.#seen, at) : 0;
  }

  /** Visits every hash of the set that was not read (all of them when the set does not track lines read). */
  unseen(visit: (hash: bigint) => void): void {
    const half = 2 ** (this.#bits - 1);
    for (let b = 0; b + 1 < this.#start.length; b++) {
      const end = this.#start[b + 1]!;
      for (let i = this.#start[b]!; i < end; i++) {
        if (this.#seen && this.#seen[i] !== 0) continue;
        const hi = ((b - half) << this.#shift) | this.#mid[i]!;
        visit(BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(this.#lo[i]! >>> 0)));
      }
    }
  }

  /** Bucket of a hash: its top bits, shifted so that buckets ascend with the signed hash. */
  #bucket(hi: number): number {
    return (hi >> this.#shift) + 2 ** (this.#bits - 1);
  }

  /** Where the set holds `hash` (an index into its tables), or -1. */
  #find(hash: bigint): number {
    if (this.size === 0) return -1;
    const hi = Number(hash >> 32n);
    const lo = Number(BigInt.asIntN(32, hash));
    const bucket = this.#bucket(hi);
    const mid = hi & this.#midMask;
    const end = this.#start[bucket + 1]!;
    for (let i = this.#start[bucket]!; i < end; i++) {
      if (this.#lo[i] === lo && this.#mid[i] === mid) return i;
    }
    return -1;
  }
}

/** Raises `marks[at]` to `value` unless it is larger already (decode threads may mark one hash at once). */
function markMax(marks: Uint32Array, at: number, value: number): void {
  for (let old = Atomics.load(marks, at); old < value;) {
    const found = Atomics.compareExchange(marks, at, old, value);
    if (found === old) return;
    old = found;
  }
}

/** log2 of the bucket count for `capacity` hashes: about 8 a bucket, at least 2^16 buckets. */
function bucketBits(capacity: number): number {
  let bits = MIN_BITS;
  while (bits < 31 && 2 ** bits * 8 < capacity) bits++;
  return bits;
}

/**
 * How this process reads the upstream, as text (`sync_runs.reading`, migration 043): the rules' version and
 * the reading settings set ({@link upstreamReading}). Two runs with the same text read a line the same way.
 */
export function readingKey(): string {
  return `v${RULES_VERSION}${readingContext()}`;
}

/** The upstream reading rules as part of a seed: `''` when none is set (the seeds of earlier versions). */
function readingContext(): string {
  const { fieldNames, timeZone } = upstreamReading();
  const names = Object.entries(fieldNames).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (names.length === 0 && timeZone === undefined) return '';
  return `\u0000${JSON.stringify({ names, timeZone: timeZone ?? null })}`;
}

/** Unknown-field limits as part of a seed: `''` for the defaults (the seeds of earlier versions). */
function limitsContext(limits: ExtraLimits): string {
  const { maxDepth, maxKeys, maxBytes } = limits;
  const d = DEFAULT_EXTRA_LIMITS;
  if (maxDepth === d.maxDepth && maxKeys === d.maxKeys && maxBytes === d.maxBytes) return '';
  return `\u0000limits ${maxDepth} ${maxKeys} ${maxBytes}`;
}
