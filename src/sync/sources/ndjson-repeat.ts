import { createHash } from 'node:crypto';
import type { NdjsonBlock, OverLongLine } from '../../extract/block-packer.js';
import { readableJsonId } from '../../extract/readable-id.js';
import { isBlank } from '../../normalize/ndjson-block.js';

/**
 * Whether a page of a paged NDJSON export repeats the page before it, key by key in order, as the CSV
 * pager compares its pages: a record's key is its id, else (no id readable from its bytes) a hash of its
 * line. The page's raw blocks pass through {@link filter} before they are decoded, and are held there while
 * the page may still be a repeat, so a repeated page is never decoded: neither staged nor counted, nor
 * marked read among the known lines. A page that differs lets them go at its first different key (its
 * first line, unless it repeats).
 */
export class RepeatedPageWatch {
  /** Keys of the page before, in order (undefined on page 1). */
  #previous: string[] | undefined;
  #keys: string[] = [];
  /** This page differs from the one before (always so on page 1, and after an empty page). */
  #differs = true;
  /** The page just read repeated the one before (set once its body ended). */
  repeated = false;

  /** Starts the next page: the keys of the page just read are the ones it is compared with. */
  startPage(): void {
    this.#previous = this.#keys;
    this.#keys = [];
    this.#differs = this.#previous.length === 0;
    this.repeated = false;
  }

  /** The page's raw blocks, in body order, once it is known they are no repeat (see the class comment). */
  async *filter(blocks: AsyncIterable<NdjsonBlock>): AsyncGenerator<NdjsonBlock> {
    const held: NdjsonBlock[] = [];
    for await (const block of blocks) {
      for (const key of blockKeys(block)) {
        if (!this.#differs && this.#previous?.[this.#keys.length] !== key) this.#differs = true;
        this.#keys.push(key);
      }
      held.push(block);
      if (this.#differs) yield* held.splice(0);
    }
    this.repeated = !this.#differs && this.#keys.length === this.#previous?.length;
    if (!this.repeated) yield* held.splice(0);
  }
}

/** The keys of a block's records in line order (blank lines are no records; over-long lines are). */
function* blockKeys(block: NdjsonBlock): Generator<string> {
  const { bytes, offsets, lineNumbers, overLong } = block;
  let o = 0;
  for (let i = 0; i < block.count; i++) {
    for (; o < overLong.length && overLong[o]!.lineNumber < lineNumbers[i]!; o++)
      yield overLongKey(overLong[o]!);
    const raw = bytes.subarray(offsets[i], offsets[i + 1]! - 1);
    if (!isBlank(raw)) yield lineKey(raw);
  }
  for (; o < overLong.length; o++) yield overLongKey(overLong[o]!);
}

/** How the simulator and most exports begin a line: its string id is read from there without a scan. */
const ID_FIRST = Buffer.from('{"id":"');

function lineKey(raw: Uint8Array): string {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (bytes.subarray(0, ID_FIRST.length).equals(ID_FIRST)) {
    const end = bytes.indexOf(0x22, ID_FIRST.length);
    const token = bytes.subarray(ID_FIRST.length, end);
    if (end > 0 && !token.includes(0x5c)) return `id ${token.toString('utf8')}`;
  }
  const id = readableJsonId(raw);
  return id !== undefined ? `id ${id}` : `line ${createHash('sha1').update(raw).digest('base64')}`;
}

function overLongKey(line: OverLongLine): string {
  return `${lineKey(Buffer.from(line.text))} of ${line.bytes} bytes`;
}
