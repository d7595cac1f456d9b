/**
 * Complete response bodies of one data state, least recently used dropped first, bounded in bytes
 * (REPORTS_READER_CACHE_BYTES; 0 turns it off). The key carries the state's `ETag`: the tables only change
 * when a run commits, so a body stays right for as long as its tag is current, and a new tag empties the
 * cache. Identical concurrent requests share one computation; a failed one is not kept. Used for the JSON
 * list, the busiest endpoint, where a DuckDB query costs milliseconds and a cached page microseconds.
 */
export class ResponseCache {
  readonly #maxBytes: number;
  #etag: string | undefined;
  #bytes = 0;
  // A Map iterates in insertion order: re-inserting on a hit keeps the least recently used first.
  #entries = new Map<string, { body: string; bytes: number }>();
  #pending = new Map<string, Promise<string>>();

  /** @param maxBytes largest total of cached bodies (UTF-16 length × 2, a bound on their memory) */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** The body for `key` in state `etag`, from the cache or from `compute` (then kept if it fits). */
  async get(etag: string, key: string, compute: () => Promise<string>): Promise<string> {
    if (this.#maxBytes === 0) return compute();
    if (etag !== this.#etag) {
      this.#etag = etag;
      this.#entries = new Map();
      this.#pending = new Map();
      this.#bytes = 0;
    }
    const hit = this.#entries.get(key);
    if (hit) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit.body;
    }
    const pending = this.#pending.get(key);
    if (pending) return pending;
    const entries = this.#entries;
    const pendings = this.#pending;
    const work = compute().finally(() => pendings.delete(key));
    pendings.set(key, work);
    const body = await work;
    if (entries === this.#entries) this.#keep(key, body);
    return body;
  }

  /** Bytes held now (for tests and metrics). */
  get bytes(): number {
    return this.#bytes;
  }

  #keep(key: string, body: string): void {
    const bytes = body.length * 2;
    if (bytes > this.#maxBytes || this.#entries.has(key)) return;
    this.#entries.set(key, { body, bytes });
    this.#bytes += bytes;
    for (const [oldKey, old] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(oldKey);
      this.#bytes -= old.bytes;
    }
  }
}
