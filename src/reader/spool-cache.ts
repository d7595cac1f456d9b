import { createWriteStream, mkdtempSync, rmSync, unlink } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';

/** A spooled body, opened for one response: read it from `handle` (its own file position), then close it. */
export interface SpooledBody {
  handle: FileHandle;
  bytes: number;
}

interface Entry {
  etag: string;
  path: string;
  ready: Promise<number>;
  bytes: number;
  users: number;
  stale: boolean;
}

/**
 * Export bodies written to temporary files at the warehouse's pace, then sent at the client's. A DuckDB
 * connection is held only while a body is produced (milliseconds to seconds), never while a slow client
 * drains it, so slow export readers cannot starve `/healthz`, stats or lists of connections.
 *
 * Bodies are keyed by data state (`ETag`) and request (`key`): later requests for the same export of the
 * same state share the file, and concurrent ones share its production. A new state makes every older file
 * stale: it is removed as soon as no response is opening it (responses already sending keep their open
 * descriptor, POSIX unlink). Files of the current state are kept up to `keepBytes`, least recently used
 * removed first; the folder is removed by {@link close}.
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
   * The body of `key` in state `etag`, opened for reading. When missing, `produce` writes it through
   * `write` (which resolves once the piece is buffered to disk); its failure fails this call and every
   * call sharing it, and nothing is kept.
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
    const shared = entry !== undefined;
    if (entry) {
      this.#entries.delete(id);
      this.#entries.set(id, entry);
    } else {
      entry = this.#create(etag, produce);
      this.#entries.set(id, entry);
      const created = entry;
      created.ready.catch(() => {
        if (this.#entries.get(id) === created) this.#entries.delete(id);
        this.#remove(created);
      });
    }
    // Counted before the first await: a request of another state (or a trim) running meanwhile must not
    // unlink the file between finding it here and opening it below.
    entry.users++;
    try {
      if (shared) await onShared();
      const bytes = await entry.ready;
      const handle = await open(entry.path, 'r');
      return { handle, bytes };
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
    if (this.#dir !== undefined) rmSync(this.#dir, { recursive: true, force: true });
    this.#dir = undefined;
  }

  #create(etag: string, produce: (write: (text: string) => Promise<void>) => Promise<void>): Entry {
    this.#dir ??= mkdtempSync(join(tmpdir(), 'reports-sync-spool-'));
    const path = join(this.#dir, `${++this.#seq}.body`);
    const entry: Entry = { etag, path, ready: Promise.resolve(0), bytes: 0, users: 0, stale: false };
    entry.ready = (async () => {
      const out = createWriteStream(path);
      const failed = new Promise<never>((_, reject) => out.once('error', reject));
      failed.catch(() => undefined);
      try {
        await produce(async (text) => {
          entry.bytes += Buffer.byteLength(text);
          if (!out.write(text)) await Promise.race([once(out, 'drain'), failed]);
        });
        out.end();
        await Promise.race([once(out, 'finish'), failed]);
      } catch (err) {
        out.destroy();
        throw err;
      }
      return entry.bytes;
    })();
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
    for (const entry of this.#entries.values()) total += entry.bytes;
    for (const [id, entry] of this.#entries) {
      if (total <= this.#keepBytes) break;
      if (entry.users > 0) continue;
      this.#entries.delete(id);
      total -= entry.bytes;
      entry.stale = true;
      this.#remove(entry);
    }
  }

  /** Unlinks a finished file nobody is opening; a file still being written is unlinked once written. */
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
