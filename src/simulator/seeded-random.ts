/**
 * Deterministic randomness for the simulator. Everything random is derived from integers (the dataset seed,
 * a slot number, a simulated day, a salt) through a stateless hash, so any record or decision can be
 * recomputed on its own, in any order, without keeping state: that is what lets a generated dataset of
 * millions of reports live in constant memory.
 */

/** A 32-bit avalanche mix of the given integers (murmur3's finaliser, chained). Same inputs, same output. */
export function hash32(...keys: number[]): number {
  let h = 0x9e3779b9;
  for (const key of keys) {
    // Fold the high bits in too, so slots and days above 2^32 (never in practice) still differ.
    h = Math.imul(h ^ (key >>> 0), 0x85ebca6b);
    h ^= Math.floor(key / 0x1_0000_0000) | 0;
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** A number in [0, 1) derived from the given integers: `hash32(...keys) / 2^32`. */
export function unitHash(...keys: number[]): number {
  return hash32(...keys) / 0x1_0000_0000;
}

/** A small sequential generator (mulberry32) for building one record from one hashed state. */
export interface Rng {
  /** The next number in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T;
}

/** A mulberry32 generator seeded with `hash32(...keys)`. */
export function seededRandom(...keys: number[]): Rng {
  return new Mulberry32(hash32(...keys));
}

class Mulberry32 implements Rng {
  #state: number;

  constructor(state: number) {
    this.#state = state;
  }

  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.#state ^ (this.#state >>> 15), 1 | this.#state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }
}

/** A stable 32-bit number for a text (FNV-1a), to turn string seeds or ids into hash keys. */
export function textHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
