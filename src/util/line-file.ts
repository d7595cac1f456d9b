import { closeSync, openSync, writeSync } from 'node:fs';

const BUFFER_BYTES = 1 << 20;

/**
 * An append-only file of text lines written synchronously through one reusable 1 MiB buffer: strings are
 * encoded once into the buffer, never joined (joining and writing strings cost ~2 µs per line).
 * Used for the sync's batch files, which DuckDB loads with `read_json`, and the simulator's export cache.
 *
 * @throws the file system's error (ENOSPC, EFBIG, EACCES, ...) from {@link write} and {@link close}.
 */
export class LineFile {
  readonly #fd: number;
  readonly #buffer = Buffer.allocUnsafe(BUFFER_BYTES);
  #used = 0;
  #closed = false;
  /** Lines written. */
  lines = 0;
  /** Longest line written, in bytes (with its `\n`): what `read_json`'s `maximum_object_size` must allow. */
  longestLine = 0;

  /** Creates (truncating) the file at `path`. */
  constructor(readonly path: string) {
    this.#fd = openSync(path, 'w');
  }

  /** Appends one line; `line` must not contain a raw line break (JSON.stringify output never does). */
  write(line: string): void {
    // UTF-8 needs at most 3 bytes per UTF-16 unit.
    if (this.#used + line.length * 3 + 1 > BUFFER_BYTES) {
      this.#drain();
      if (line.length * 3 + 1 > BUFFER_BYTES) {
        const bytes = Buffer.from(`${line}\n`, 'utf8');
        this.#writeAll(bytes, bytes.length);
        this.#count(bytes.length);
        return;
      }
    }
    const n = this.#buffer.write(line, this.#used, 'utf8');
    this.#buffer[this.#used + n] = 0x0a;
    this.#used += n + 1;
    this.#count(n + 1);
  }

  /** Appends lines already encoded (each ending with `\n`), e.g. a {@link LineBuffer}'s. */
  writeBytes(encoded: EncodedLines): void {
    this.#drain();
    this.#writeAll(encoded.bytes, encoded.bytes.length);
    this.lines += encoded.lines;
    if (encoded.longest > this.longestLine) this.longestLine = encoded.longest;
  }

  /** Writes what is buffered and closes the file. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#drain();
    } finally {
      closeSync(this.#fd);
    }
  }

  #count(bytes: number): void {
    this.lines++;
    if (bytes > this.longestLine) this.longestLine = bytes;
  }

  #drain(): void {
    this.#writeAll(this.#buffer, this.#used);
    this.#used = 0;
  }

  /** `writeSync` may write less than asked (a nearly full disk): loop until all of it is written or it throws. */
  #writeAll(bytes: Uint8Array, length: number): void {
    let off = 0;
    while (off < length) off += writeSync(this.#fd, bytes, off, length - off);
  }
}

/** Lines encoded as UTF-8, each ending with `\n`: `lines` of them, the longest `longest` bytes (with `\n`). */
export interface EncodedLines {
  bytes: Uint8Array;
  lines: number;
  longest: number;
}

/**
 * Lines encoded into one growing in-memory buffer (what a decode worker hands back, transferred
 * without a copy). `line` must not contain a raw line break.
 */
export class LineBuffer {
  #buffer = Buffer.allocUnsafe(64 * 1024);
  #used = 0;
  #lines = 0;
  #longest = 0;

  /** Appends one line. */
  write(line: string): void {
    this.#reserve(line.length * 3 + 1);
    const n = this.#buffer.write(line, this.#used, 'utf8');
    this.#end(n);
  }

  /**
   * Appends one line made of `head`, bytes already UTF-8 (copied, never decoded) and `tail`: a line that
   * embeds received text as it came saves decoding and encoding it again.
   */
  writeParts(head: string, body: Uint8Array, tail: string): void {
    this.#reserve((head.length + tail.length) * 3 + body.length + 1);
    let n = this.#buffer.write(head, this.#used, 'utf8');
    this.#buffer.set(body, this.#used + n);
    n += body.length;
    n += this.#buffer.write(tail, this.#used + n, 'utf8');
    this.#end(n);
  }

  #reserve(need: number): void {
    if (this.#used + need <= this.#buffer.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#buffer.length * 2, this.#used + need));
    this.#buffer.copy(bigger, 0, 0, this.#used);
    this.#buffer = bigger;
  }

  // Ends the line of `n` bytes written at the end of the buffer.
  #end(n: number): void {
    this.#buffer[this.#used + n] = 0x0a;
    this.#used += n + 1;
    this.#lines++;
    if (n + 1 > this.#longest) this.#longest = n + 1;
  }

  /** The lines written so far (a view on the buffer; the buffer is not reused). */
  take(): EncodedLines {
    return { bytes: this.#buffer.subarray(0, this.#used), lines: this.#lines, longest: this.#longest };
  }
}
