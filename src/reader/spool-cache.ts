import { createWriteStream, existsSync, unlink } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import { createSpoolFolder, removeSpoolFolder } from './spool-folders.js';

/**
 * A spooled body opened for one response, readable while it is still being written: {@link read} yields
 * what is on disk and waits for more until the body is complete. `bytes` is its length when it was already
 * complete at opening (a `Content-Length`), else undefined.
 */
export interface SpooledBody {
  bytes: number | undefined;
  /**
   * The body from its first byte, in pieces of at most 64 KiB, closing the file at the end.
   * @throws the producer's error when the body cannot be completed (the response must then be cut off)
   */
  read(): AsyncGenerator<Buffer>;
}

interface Entry {
  etag: string;
  path: string;
  /** Settles when the body is complete (its length) or failed. */
  ready: Promise<number>;
  /** Bytes written to the file so far (readable by others). */
  flushed: number;
  complete: boolean;
  error: unknown;
  /** Resolved (and replaced) at every write, at completion and at failure. */
  progress: { promise: Promise<void>; resolve: () => void };
  users: number;
  /** Responses handed this body and not done sending it; production stops when none is left. */
  followers: number;
  stale: boolean;
}

/** Thrown into a production nobody reads any more (spool-cache.ts): it ends, and its connection is freed. */
class AbandonedBody extends Error {
  constructor() {
    super('every response reading this export body has ended');
  }
}

/**
 * Export bodies written to temporary files at the warehouse's pace and sent at the client's, while they are
 * written: a response starts as soon as the first piece is on disk, not when the whole body is. A DuckDB
 * connection is held only while a body is produced, never while a slow client drains it, so slow export
 * readers cannot starve `/healthz`, stats or lists of connections. A production stops once every response
 * it was for has ended (clients that left mid-export): otherwise each one held an export connection until
 * the whole body was written (~100 s for 4M reports under load), for a file no one would read once the data
 * changed, and a few departed clients left every export request a `503` meanwhile.
 *
 * Bodies are keyed by data state (`ETag`) and request (`key`): later requests for the same export of the
 * same state share the file (and follow its production when it is not complete yet). A new state makes every
 * older file stale: it is removed as soon as no response is opening it (responses already sending keep
 * their open descriptor, POSIX unlink). Complete files of the current state are kept up to `keepBytes`,
 * least recently used removed first; the folder is removed by {@link close}.
 */
export class SpoolCache {
  readonly #keepBytes: number;
  #dir: string | undefined;
  #seq = 0;
  // Insertion order = least recently used first (a hit re-inserts).
  #entries = new Map<string, Entry>();

  /** @param keepBytes bytes of finished bodies of the current state kept for reuse (REPORTS_READER_SPOOL_BYTES) */
  constructor(keepBytes: number) {
    this.#keepBytes = keepBytes;
  }

  /**
   * The body of `key` in state `etag`, opened for reading once its first piece is written (or it is
   * complete). When missing, `produce` writes it through `write` (which resolves once the piece is
   * buffered); a failure before the first piece fails this call and every call sharing it, a later one
   * fails their {@link SpooledBody.read}, and nothing is kept.
   *
   * @param onShared called instead of `produce` when the body exists or is being produced by another
   *   request (the caller then gives its warehouse connection back at once)
   */
  async open(
    etag: string,
    key: string,
    produce: (write: (text: string) => Promise<void>) => Promise<void>,
    onShared: () => Promise<void>,
  ): Promise<SpooledBody> {
    this.#forgetOtherStates(etag);
    const id = `${etag}\u0000${key}`;
    let entry = this.#entries.get(id);
    // A production that failed (or was abandoned) is forgotten a few microtasks later: start afresh.
    if (entry?.error !== undefined) entry = undefined;
    const shared = entry !== undefined;
    if (entry) {
      this.#entries.delete(id);
      this.#entries.set(id, entry);
    } else {
      entry = this.#create(etag, produce);
      this.#entries.set(id, entry);
      const created = entry;
      created.ready.then(
        () => this.#trim(),
        () => {
          if (this.#entries.get(id) === created) this.#entries.delete(id);
          this.#remove(created);
        },
      );
    }
    // Counted before the first await: a request of another state (or a trim) running meanwhile must not
    // unlink the file between finding it here and opening it below.
    entry.users++;
    try {
      if (shared) await onShared();
      while (entry.flushed === 0 && !entry.complete) {
        if (entry.error !== undefined) throw entry.error;
        await entry.progress.promise;
      }
      const handle = await open(entry.path, 'r');
      // Counted before `users` drops, so the production never sees nobody between the two.
      entry.followers++;
      return { bytes: entry.complete ? entry.flushed : undefined, read: () => following(entry, handle) };
    } finally {
      entry.users--;
      if (entry.stale) this.#remove(entry);
      this.#trim();
    }
  }

  /** Removes every file and the folder. Responses sending keep their open descriptors. */
  close(): void {
    for (const entry of this.#entries.values()) entry.stale = true;
    this.#entries.clear();
    if (this.#dir !== undefined) removeSpoolFolder(this.#dir);
    this.#dir = undefined;
  }

  #create(etag: string, produce: (write: (text: string) => Promise<void>) => Promise<void>): Entry {
    // Made again when something removed it meanwhile (a temp folder cleaner): else every export fails.
    if (this.#dir !== undefined && !existsSync(this.#dir)) this.#dir = undefined;
    this.#dir ??= createSpoolFolder();
    const path = join(this.#dir, `${++this.#seq}.body`);
    const entry: Entry = {
      etag,
      path,
      ready: Promise.resolve(0),
      flushed: 0,
      complete: false,
      error: undefined,
      progress: pulse(),
      users: 0,
      followers: 0,
      stale: false,
    };
    const signal = () => {
      const { resolve } = entry.progress;
      entry.progress = pulse();
      resolve();
    };
    entry.ready = (async () => {
      const out = createWriteStream(path);
      const failed = new Promise<never>((_, reject) => out.once('error', reject));
      failed.catch(() => undefined);
      try {
        await produce(async (text) => {
          // Before its first piece is on disk, the request that started it is still opening it.
          if (entry.flushed > 0 && entry.users === 0 && entry.followers === 0) {
            // Failed at once, so no request joins it while its connection is being given back.
            entry.error = new AbandonedBody();
            throw entry.error;
          }
          const piece = Buffer.from(text);
          const written = (err?: Error | null) => {
            if (err) return; // the stream's 'error' event fails the production
            entry.flushed += piece.length;
            signal();
          };
          if (!out.write(piece, written)) await Promise.race([once(out, 'drain'), failed]);
        });
        out.end();
        await Promise.race([once(out, 'finish'), failed]);
      } catch (err) {
        out.destroy();
        entry.error = err;
        signal();
        throw err;
      }
      entry.complete = true;
      signal();
      return entry.flushed;
    })();
    entry.ready.catch(() => undefined);
    return entry;
  }

  #forgetOtherStates(etag: string): void {
    for (const [id, entry] of this.#entries) {
      if (entry.etag === etag) continue;
      this.#entries.delete(id);
      entry.stale = true;
      this.#remove(entry);
    }
  }

  #trim(): void {
    let total = 0;
    for (const entry of this.#entries.values()) total += entry.flushed;
    for (const [id, entry] of this.#entries) {
      if (total <= this.#keepBytes) break;
      if (entry.users > 0 || !entry.complete) continue;
      this.#entries.delete(id);
      total -= entry.flushed;
      entry.stale = true;
      this.#remove(entry);
    }
  }

  /** Unlinks a file nobody is opening once it is written (or failed) and no longer kept. */
  #remove(entry: Entry): void {
    if (entry.users > 0) return;
    entry.ready.then(
      () => {
        if (entry.users === 0 && (entry.stale || !this.#isKept(entry))) unlink(entry.path, () => undefined);
      },
      () => unlink(entry.path, () => undefined),
    );
  }

  #isKept(entry: Entry): boolean {
    for (const kept of this.#entries.values()) if (kept === entry) return true;
    return false;
  }
}

/**
 * {@link follow} for one response, counted off as a follower (counted by `open`) once, when it ends or is
 * ended: `return()` counts off at once, also for a reading that never started (a client gone before the
 * response's stream first read: the generator's own `finally` never runs then, its file is closed here).
 */
function following(entry: Entry, handle: FileHandle): AsyncGenerator<Buffer> {
  let counted = true;
  const countOff = () => {
    if (counted) entry.followers--;
    counted = false;
  };
  const reading = follow(entry, handle, countOff);
  const end = reading.return.bind(reading);
  reading.return = async (value) => {
    countOff();
    try {
      return await end(value);
    } catch {
      return { done: true, value: undefined };
    } finally {
      await handle.close().catch(() => undefined);
    }
  };
  return reading;
}

/** Reads `entry`'s file from the start, following its production until it is complete or failed. */
async function* follow(entry: Entry, handle: FileHandle, countOff: () => void): AsyncGenerator<Buffer> {
  let position = 0;
  try {
    for (;;) {
      if (position < entry.flushed) {
        const piece = Buffer.allocUnsafe(Math.min(64 * 1024, entry.flushed - position));
        const { bytesRead } = await handle.read(piece, 0, piece.length, position);
        if (bytesRead === 0) throw new Error(`spool file ${entry.path} ended before its written length`);
        position += bytesRead;
        yield bytesRead === piece.length ? piece : piece.subarray(0, bytesRead);
      } else if (entry.complete) {
        return;
      } else if (entry.error !== undefined) {
        throw entry.error;
      } else {
        await entry.progress.promise;
      }
    }
  } finally {
    countOff();
    await handle.close();
  }
}

function pulse(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
