/** One physical line of a body. */
export interface Line {
  /** 1-based physical line number (blank lines count). */
  lineNumber: number;
  /** The text without its `\n` (a trailing `\r` is kept: JSON treats it as white space). Cut when `overLimit`. */
  text: string;
  /** Size of the whole line in bytes, without the `\n`. */
  bytes: number;
  /** The line was longer than `maxLineBytes`: `text` holds only its first `keepBytes` bytes. */
  overLimit: boolean;
  /** False only for a last line with no final `\n` (a close-delimited body may have been cut there). */
  terminated: boolean;
  /**
   * The line's bytes (without BOM and `\n`). Absent when `overLimit`. Lets a hash skip encoding `text`
   * back to UTF-8.
   */
  raw?: Buffer | undefined;
}

/** Options of {@link LineSplitter} (bytes). */
export interface SplitLinesOptions {
  /** Longest line accepted in full; longer lines are not buffered past `keepBytes` (constant memory). */
  maxLineBytes: number;
  /** Bytes of an over-long line kept for the quarantine. */
  keepBytes: number;
}

const NL = 0x0a;

/** Receives the lines a {@link LineSplitter} finds, in body order. */
export interface LineSink {
  /**
   * A whole line found inside one chunk: `chunk[start, end)`, without a BOM on line 1; `chunk[end]` is its
   * `\n`; `bytes` is its size with a stripped BOM. The chunk is valid only until {@link LineSplitter.push}
   * returns (copy what you keep).
   */
  whole(chunk: Buffer, start: number, end: number, lineNumber: number, bytes: number): void;
  /** Any other line: one spanning chunks, one over `maxLineBytes`, or the last one without a final `\n`. */
  line(line: Line): void;
}

/**
 * Splits a byte stream into lines, as a push parser: {@link push} each chunk, then {@link end}; the lines go
 * to a {@link LineSink} as they complete. Never holds more than one line (bounded by `maxLineBytes`) beyond
 * the chunk. Strips a UTF-8 BOM at the very start; splitting on the `\n` byte is safe for UTF-8 (it never
 * occurs inside a multi-byte sequence). Empty lines are handed over too, so line numbers are physical. A
 * whole line inside a chunk (nearly every line) is handed over as a range of the chunk, with no object or
 * copy made for it: the NDJSON reader packs a 1M-line export's lines straight into blocks (extract/ndjson.ts).
 */
export class LineSplitter {
  #pending: Buffer[] = [];
  /** Bytes of the current line seen so far (also past the limit). */
  #pendingBytes = 0;
  /** Bytes of the current line held in `#pending`. */
  #kept = 0;
  #lineNumber = 0;

  constructor(private readonly options: SplitLinesOptions) {}

  /** Splits one chunk; the lines it completes go to `sink` before this returns. */
  push(chunk: Uint8Array, sink: LineSink): void {
    const max = this.options.maxLineBytes;
    const buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let nl = buf.indexOf(NL, start); nl !== -1; nl = buf.indexOf(NL, start)) {
      if (this.#pendingBytes === 0 && nl - start <= max) {
        // Fast path: a whole line inside this chunk.
        const n = ++this.#lineNumber;
        const from = n === 1 && hasBom(buf, start, nl) ? start + 3 : start;
        sink.whole(buf, from, nl, n, nl - start);
      } else {
        this.#hold(buf.subarray(start, nl));
        sink.line(this.#take(true));
      }
      start = nl + 1;
    }
    if (start < buf.length) this.#hold(buf.subarray(start));
  }

  /** Ends the body: a last line without a final `\n` goes to `sink`, flagged unterminated. */
  end(sink: LineSink): void {
    if (this.#pendingBytes > 0) sink.line(this.#take(false));
  }

  #take(terminated: boolean): Line {
    const { maxLineBytes } = this.options;
    const buf = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending, this.#kept);
    const overLimit = this.#pendingBytes > maxLineBytes;
    const lineNumber = ++this.#lineNumber;
    let text = buf.toString('utf8');
    // A BOM can arrive split over chunks: strip it from the first line's text instead.
    if (lineNumber === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const line: Line = {
      lineNumber,
      text,
      bytes: this.#pendingBytes,
      overLimit,
      terminated,
      raw: overLimit ? undefined : lineNumber === 1 && hasBom(buf, 0, buf.length) ? buf.subarray(3) : buf,
    };
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#kept = 0;
    return line;
  }

  #hold(piece: Buffer): void {
    const { maxLineBytes, keepBytes } = this.options;
    this.#pendingBytes += piece.length;
    const limit = this.#pendingBytes > maxLineBytes ? keepBytes : maxLineBytes;
    if (this.#kept < limit) {
      const room = limit - this.#kept;
      const part = piece.length > room ? piece.subarray(0, room) : piece;
      // Copy: the chunk may be a view on a pooled buffer that undici reuses.
      this.#pending.push(Buffer.from(part));
      this.#kept += part.length;
    }
    if (this.#pendingBytes > maxLineBytes && this.#kept > keepBytes) {
      const all = Buffer.concat(this.#pending, this.#kept).subarray(0, keepBytes);
      this.#pending = [all];
      this.#kept = all.length;
    }
  }
}

/** True when `bytes[start, end)` starts with a UTF-8 BOM. */
function hasBom(bytes: Buffer, start: number, end: number): boolean {
  return end - start >= 3 && bytes[start] === 0xef && bytes[start + 1] === 0xbb && bytes[start + 2] === 0xbf;
}
