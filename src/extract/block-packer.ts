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
 * `bytes[offsets[i] .. offsets[i+1])` without its `\n`, physical line number `lineNumbers[i]`. Lines over
 * the length limit travel as {@link OverLongLine}s (ascending line numbers). When `unterminated` is set, the
 * block's last line ended the body without a final `\n` (the body may have been cut there, DESIGN.md §4);
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

  add(raw: Uint8Array, lineNumber: number): void {
    if (this.#used + raw.length > this.#bytes.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(this.#bytes.length * 2, this.#used + raw.length));
      this.#bytes.copy(bigger, 0, 0, this.#used);
      this.#bytes = bigger;
    }
    this.#bytes.set(raw, this.#used);
    this.#used += raw.length;
    this.#offsets.push(this.#used);
    this.#lines.push(lineNumber);
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
