const NL = 0x0a;

/** A line longer than the line-length limit: only its first bytes were kept (never buffered whole). */
export interface OverLongLine {
  lineNumber: number;
  /** Size of the whole line in bytes, without its `\n`. */
  bytes: number;
  /** Its first `keepBytes` bytes, as text. */
  text: string;
  /** The limit it passed (bytes), for the quarantine's reason. */
  limit: number;
}

/**
 * A run of NDJSON lines packed for a decode worker (raw lines, nothing parsed): line `i` is
 * `bytes[offsets[i] .. offsets[i+1] - 1)`, each line being stored with a `\n` after it (so the lines of a
 * chunk are copied in one piece), physical line number `lineNumbers[i]`. Lines over
 * the length limit travel as {@link OverLongLine}s (ascending line numbers). When `unterminated` is set, the
 * block's last line ended the body without a final `\n` (the body may have been cut there, docs/how-a-sync-works.md);
 * `url` names the export for that error.
 */
export interface NdjsonBlock {
  bytes: Uint8Array;
  /** `count + 1` offsets into `bytes`. */
  offsets: Uint32Array;
  lineNumbers: Float64Array;
  count: number;
  overLong: OverLongLine[];
  unterminated?: { url: string } | undefined;
}

/**
 * Packs lines into {@link NdjsonBlock}s of about `targetBytes` (a line's bytes are copied: the splitter's
 * views are only valid until the next line).
 */
export class BlockPacker {
  #bytes: Buffer;
  #used = 0;
  /** Bytes of the kept text of over-long lines (they count towards the block's size, not its bytes). */
  #keptText = 0;
  #offsets: number[] = [0];
  #lines: number[] = [];
  #overLong: OverLongLine[] = [];
  #unterminated: { url: string } | undefined;
  /** A run of lines of one chunk not copied yet: `chunk[#runStart, #runEnd)` goes to `#bytes[#runAt…]`. */
  #run: Buffer | null = null;
  #runStart = 0;
  #runEnd = 0;
  #runAt = 0;

  constructor(private readonly targetBytes = 1 << 20) {
    this.#bytes = Buffer.allocUnsafeSlow(targetBytes);
  }

  /** Lines packed so far (over-long ones included). */
  get count(): number {
    return this.#lines.length + this.#overLong.length;
  }

  /** True once the block holds `targetBytes` or more. */
  get full(): boolean {
    return this.#used + this.#keptText >= this.targetBytes;
  }

  /**
   * True when a line of `lineBytes` (without its `\n`) would not fit in the block's buffer: take the block
   * first, so that a block is never copied into a bigger buffer (which cost a copy of ~1 MiB per block).
   * A block with no line always takes it.
   */
  wouldOverflow(lineBytes: number): boolean {
    return this.count > 0 && this.#used + lineBytes + 1 > this.#bytes.length;
  }

  /** Adds one whole line (its bytes without the `\n`, copied). */
  add(raw: Uint8Array, lineNumber: number): void {
    this.#room(raw.length + 1);
    this.#bytes.set(raw, this.#used);
    this.#bytes[this.#used + raw.length] = NL;
    this.#used += raw.length + 1;
    this.#offsets.push(this.#used);
    this.#lines.push(lineNumber);
  }

  /**
   * Adds the line `chunk[start, end)`, where `chunk[end]` is its `\n`. Lines that follow each other in one
   * chunk are copied together, by {@link flush} or {@link take}: call {@link flush} before the chunk is
   * reused (one copy a chunk instead of one a line: the main thread cuts every line of an export).
   */
  addRange(chunk: Buffer, start: number, end: number, lineNumber: number): void {
    if (this.#run !== chunk || this.#runEnd !== start) {
      this.flush();
      this.#run = chunk;
      this.#runStart = start;
      this.#runAt = this.#used;
    }
    this.#room(end + 1 - start);
    this.#runEnd = end + 1;
    this.#used += end + 1 - start;
    this.#offsets.push(this.#used);
    this.#lines.push(lineNumber);
  }

  /** Copies the lines {@link addRange} left in their chunk into the block. */
  flush(): void {
    if (this.#run === null) return;
    this.#run.copy(this.#bytes, this.#runAt, this.#runStart, this.#runEnd);
    this.#run = null;
  }

  /** Makes room for `bytes` more (the bytes of a pending run are copied later, into the new buffer). */
  #room(bytes: number): void {
    if (this.#used + bytes <= this.#bytes.length) return;
    const bigger = Buffer.allocUnsafeSlow(Math.max(this.#bytes.length * 2, this.#used + bytes));
    this.#bytes.copy(bigger, 0, 0, this.#used);
    this.#bytes = bigger;
  }

  /** Adds a line past the length limit (its kept text counts towards the block's size). */
  addOverLong(line: OverLongLine): void {
    this.#overLong.push(line);
    this.#keptText += Buffer.byteLength(line.text) + 64;
  }

  /** Adds the body's last line, which had no final `\n`: it ends the block (and the body). */
  addUnterminated(raw: Uint8Array, lineNumber: number, url: string): void {
    this.add(raw, lineNumber);
    this.#unterminated = { url };
  }

  /** The block so far; the packer starts a new one. */
  take(): NdjsonBlock {
    this.flush();
    const block: NdjsonBlock = {
      bytes: new Uint8Array(this.#bytes.buffer, this.#bytes.byteOffset, this.#used),
      offsets: Uint32Array.from(this.#offsets),
      lineNumbers: Float64Array.from(this.#lines),
      count: this.#lines.length,
      overLong: this.#overLong,
      ...(this.#unterminated ? { unterminated: this.#unterminated } : {}),
    };
    this.#bytes = Buffer.allocUnsafeSlow(this.targetBytes);
    this.#used = 0;
    this.#keptText = 0;
    this.#offsets = [0];
    this.#lines = [];
    this.#overLong = [];
    this.#unterminated = undefined;
    return block;
  }
}
