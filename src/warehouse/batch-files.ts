import { mkdirSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { LineFile, type EncodedLines } from '../util/line-file.js';
import { holdsSecret, redactSecrets } from '../util/redact.js';
import type { DecodedBlock, Reject } from '../normalize/reject.js';

/** A closed batch file: where it is, its lines and its longest line (bytes). */
export interface BatchFile {
  readonly path: string;
  readonly lines: number;
  readonly longestLine: number;
}

/** One batch as written: its files of staged rows and known lines (null when none), and its rejects. */
export interface WrittenBatch {
  rows: BatchFile | null;
  seen: BatchFile | null;
  rejects: Reject[];
}

/**
 * Writes decoded blocks into the batch files of one run (`<spool>/<runId>-<batch>-rows.ndjson` and
 * `…-seen.ndjson`, the lines of staged-line.ts) and gathers their rejects, until {@link take} closes the
 * batch. Secrets an upstream echoed in a report are redacted before a line is written (redact.ts). The
 * files are transport only: {@link remove} deletes a batch's files once DuckDB loaded them.
 */
export class BatchFiles {
  readonly #spoolDir: string;
  readonly #runId: string;
  #rows: LineFile | null = null;
  #seen: LineFile | null = null;
  #rejects: Reject[] = [];
  /** Rejects of a batch whose files could not be written. */
  #unwritten: Reject[] = [];
  #buffered = 0;
  #files = new Set<string>();

  constructor(spoolDir: string, runId: string) {
    this.#spoolDir = spoolDir;
    this.#runId = runId;
  }

  /** Records added since the last {@link take}. */
  get pending(): number {
    return this.#buffered;
  }

  /** Creates the spool folder (idempotent). */
  open(): void {
    mkdirSync(this.#spoolDir, { recursive: true });
  }

  /**
   * Adds a decoded block to batch `batch` (its number names the files).
   *
   * @throws a file-system error writing the batch files
   */
  add(block: DecodedBlock, batch: number): void {
    this.#buffered += block.loaded + block.rejected;
    if (block.rows.lines > 0) (this.#rows ??= this.#file(batch, 'rows')).writeBytes(redactLines(block.rows));
    if (block.seen.lines > 0) (this.#seen ??= this.#file(batch, 'seen')).writeBytes(block.seen);
    for (const r of block.rejects) this.#rejects.push(r);
  }

  /**
   * Closes the current batch's files and returns them with its rejects; the next {@link add} starts a new
   * batch. Both files are closed even when one fails.
   *
   * @throws a file-system error flushing a file (the batch's files are deleted, its rejects are kept for
   *   {@link discard})
   */
  take(): WrittenBatch {
    const rows = this.#rows;
    const seen = this.#seen;
    const batch: WrittenBatch = { rows, seen, rejects: this.#rejects };
    this.#rows = null;
    this.#seen = null;
    this.#rejects = [];
    this.#buffered = 0;
    try {
      try {
        rows?.close();
      } finally {
        seen?.close(); // closed even when the rows file failed, so no descriptor is left open
      }
    } catch (err) {
      this.#unwritten.push(...batch.rejects);
      this.remove(batch);
      throw err;
    }
    return batch;
  }

  /** Deletes a batch's files; never throws (a file that cannot be deleted is left for {@link clearSpool}). */
  remove(batch: WrittenBatch): void {
    for (const f of [batch.rows, batch.seen]) {
      if (!f) continue;
      removeQuietly(f.path);
      this.#files.delete(f.path);
    }
  }

  /**
   * Drops the batch being written and deletes every file this writer made (the spool folder too when it is
   * empty). Returns the rejects not yet taken (or of a batch that could not be written). Never throws.
   */
  discard(): Reject[] {
    const rejects = [...this.#unwritten, ...this.#rejects];
    this.#unwritten = [];
    for (const f of [this.#rows, this.#seen]) {
      try {
        f?.close();
      } catch {
        // a file that cannot be flushed is deleted below anyway
      }
    }
    this.#rows = null;
    this.#seen = null;
    this.#rejects = [];
    this.#buffered = 0;
    for (const path of this.#files) removeQuietly(path);
    this.#files.clear();
    try {
      rmdirSync(this.#spoolDir); // only when empty: another writer's files stay
    } catch {
      // not empty, or already gone
    }
    return rejects;
  }

  #file(batch: number, kind: 'rows' | 'seen'): LineFile {
    const path = join(this.#spoolDir, `${this.#runId}-${batch}-${kind}.ndjson`);
    this.#files.add(path);
    return new LineFile(path);
  }
}

/**
 * The folder for a warehouse's batch files: `<warehouse>.spool` beside the file (same disk, same
 * permissions), or one under the OS temp folder for an in-memory warehouse.
 */
export function spoolDirFor(warehousePath: string, tmp: string): string {
  return warehousePath === ':memory:'
    ? join(tmp, `reports-sync-spool-${process.pid}`)
    : `${warehousePath}.spool`;
}

/**
 * Deletes batch files left by runs that were killed (their staging rows were committed or rolled back by
 * DuckDB; the files are only transport). Call at the start of a run: one process holds the warehouse, and it
 * runs one sync at a time.
 */
export function clearSpool(spoolDir: string): void {
  let names: string[];
  try {
    names = readdirSync(spoolDir);
  } catch {
    return;
  }
  for (const name of names) if (name.endsWith('.ndjson')) rmSync(join(spoolDir, name), { force: true });
}

/** `rm -f` that never throws: a leftover batch file is garbage in the spool folder, not a failed run. */
function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // EPERM/EBUSY: left for the next run's clearSpool
  }
}

/**
 * Staged lines with any secret an upstream echoed in a report's field redacted (redact.ts): a report never
 * carries the API key into the warehouse. The check is a byte search; only a block that holds one is
 * decoded and encoded again.
 */
function redactLines(encoded: EncodedLines): EncodedLines {
  if (!holdsSecret(encoded.bytes)) return encoded;
  const bytes = Buffer.from(redactSecrets(Buffer.from(encoded.bytes).toString('utf8')), 'utf8');
  // '[redacted]' may be longer than the secret: the longest line grows by at most the difference per hit.
  return { ...encoded, bytes, longest: encoded.longest + bytes.length };
}
