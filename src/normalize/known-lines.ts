import { hash } from 'node:crypto';
import xxhash, { type XXHashAPI } from 'xxhash-wasm';

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
const RULES_VERSION = 3; // 2: xxHash64 instead of SHA-1 cut to 64 bits; 3: location keys kept, CR never left in a CSV cell

/** A {@link KnownLines} set as passed to a worker thread (its tables are shared memory). */
export interface KnownLinesState {
  source: string;
  size: number;
  hi: SharedArrayBuffer;
  lo: SharedArrayBuffer;
  used: SharedArrayBuffer;
}

/** The outcome of {@link KnownLines.check}: the line's 64-bit hash, and whether a current report came from it. */
export interface LineCheck {
  /** Signed 64-bit hash of the raw line (what `reports.line_hash` stores). */
  hash: bigint;
  known: boolean;
}

/**
 * The raw-line hashes of the warehouse's current reports, loaded once per run, so a re-sync skips
 * unchanged records before JSON.parse, validation and staging (a no-change re-sync cost as much
 * as the first load). A line whose hash is known produced, byte for byte, a report that is current and
 * not tombstoned; the run only stages its hash (`staging_seen`) so the merge marks that report seen.
 *
 * A hash is xxHash64 of the line's UTF-8 bytes, seeded by the source, the export's header (CSV column order
 * changes what a row means) and {@link RULES_VERSION}. Two different lines share a hash with probability
 * ~2^-64 per pair (with 4M lines ~4e-7 for any pair): such a changed line would be taken as unchanged until
 * it changes again. It is no defence against lines crafted to collide, and neither was a 64-bit cut of
 * SHA-1 (2^32 work); the upstream is trusted for its own records' identity anyway. The set is an
 * open-addressing table of 9 bytes per slot, 2–4 slots per report (18–36 MiB for 1M reports).
 */
export class KnownLines {
  readonly #hi: Int32Array;
  readonly #lo: Int32Array;
  readonly #used: Uint8Array;
  readonly #mask: number;
  readonly #source: string;
  #seed = 0n;
  readonly #h64: XXHashAPI['h64'];
  readonly #h64Raw: XXHashAPI['h64Raw'];
  #size: number;

  private constructor(source: string, capacity: number, shared?: KnownLinesState) {
    let slots = 16;
    while (slots < capacity * 2) slots *= 2;
    // Shared memory, so the decode workers read the same table without a copy.
    this.#hi = new Int32Array(shared?.hi ?? new SharedArrayBuffer(slots * 4));
    this.#lo = new Int32Array(shared?.lo ?? new SharedArrayBuffer(slots * 4));
    this.#used = new Uint8Array(shared?.used ?? new SharedArrayBuffer(slots));
    this.#mask = this.#used.length - 1;
    this.#source = source;
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

  /** What a worker needs to rebuild this set with {@link fromState} (shared memory, not copied). */
  state(): KnownLinesState {
    return {
      source: this.#source,
      size: this.size,
      hi: this.#hi.buffer as SharedArrayBuffer,
      lo: this.#lo.buffer as SharedArrayBuffer,
      used: this.#used.buffer as SharedArrayBuffer,
    };
  }

  /**
   * The set whose {@link state} was passed to this thread (read-only use: {@link check}).
   *
   * @throws Error when this thread has not awaited {@link loadLineHasher}
   */
  static fromState(state: KnownLinesState): KnownLines {
    return new KnownLines(state.source, 0, state);
  }

  /** An empty set (nothing is skipped; hashes are still computed for staging). */
  static async empty(source: string): Promise<KnownLines> {
    await loadLineHasher();
    return new KnownLines(source, 0);
  }

  /**
   * An empty set sized for `capacity` hashes, to be filled with {@link add} (the warehouse's current
   * line hashes: warehouse/known-line-hashes.ts).
   */
  static async withCapacity(source: string, capacity: number): Promise<KnownLines> {
    await loadLineHasher();
    return new KnownLines(source, capacity);
  }

  /**
   * Adds one hash, given as its high and low signed 32-bit halves; false when it was held already. Only
   * before the set is shared with workers ({@link state} copies the size).
   */
  add(hi: number, lo: number): boolean {
    if (!this.#insert(hi, lo)) return false;
    this.#size++;
    return true;
  }

  /**
   * Sets what a line's meaning depends on besides its text (the CSV header line; `''` for NDJSON), for
   * the lines checked from now on. Hashes staged with one context never match lines read with another.
   */
  setContext(context: string): void {
    const key = hash(
      'md5',
      `reports-sync/line-hash/v${RULES_VERSION}\u0000${this.#source}\u0000${context}`,
      'buffer',
    );
    this.#seed = key.readBigUInt64LE(0);
  }

  /**
   * Hashes one raw line (without its line break) and looks it up. `text` may be given as its UTF-8 bytes
   * (same hash, no encoding step).
   */
  check(text: string | Uint8Array): LineCheck {
    const h = BigInt.asIntN(
      64,
      typeof text === 'string' ? this.#h64(text, this.#seed) : this.#h64Raw(text, this.#seed),
    );
    if (this.size === 0) return { hash: h, known: false };
    const hi = Number(h >> 32n);
    const lo = Number(BigInt.asIntN(32, h));
    return { hash: h, known: this.#has(hi, lo) };
  }

  #slot(hi: number, lo: number): number {
    return (Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b) >>> 0) & this.#mask;
  }

  #has(hi: number, lo: number): boolean {
    for (let s = this.#slot(hi, lo); this.#used[s] === 1; s = (s + 1) & this.#mask) {
      if (this.#hi[s] === hi && this.#lo[s] === lo) return true;
    }
    return false;
  }

  #insert(hi: number, lo: number): boolean {
    let s = this.#slot(hi, lo);
    for (; this.#used[s] === 1; s = (s + 1) & this.#mask) {
      if (this.#hi[s] === hi && this.#lo[s] === lo) return false;
    }
    this.#used[s] = 1;
    this.#hi[s] = hi;
    this.#lo[s] = lo;
    return true;
  }
}
