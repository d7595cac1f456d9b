import type { NdjsonBlock } from '../extract/block-packer.js';
import { ndjsonBlocks, type NdjsonOptions } from '../extract/ndjson.js';
import type { BlockDecoders } from './decoders.js';
import type { DecodedBlock } from './reject.js';

/** Raw blocks in, the ones to decode out, in order. */
export type RawBlocksFilter = (blocks: AsyncIterable<NdjsonBlock>) => AsyncIterable<NdjsonBlock>;

// Blocks decoding at once: enough to keep every worker busy, few enough to bound memory (~1 MiB each).
const MAX_BLOCKS_IN_FLIGHT = 6;

/**
 * NDJSON body → {@link DecodedBlock}s in body order: the body's raw line blocks (extract/ndjson.ts) decoded
 * by `decoders` (worker threads or inline, see ndjson-block.ts), at most a few blocks ahead. Every line,
 * the over-long ones and an unterminated last one included, travels in a block; `rawBlocks`, when given,
 * decides which raw blocks are decoded (a paged export holds back a page repeating the one before).
 *
 * @throws SyncError `BODY_TRUNCATED` (retryable) when the body's last line has no final newline and does
 *   not parse: a close-delimited body was cut mid-line (docs/how-a-sync-works.md)
 */
export async function* decodeNdjson(
  body: AsyncIterable<Uint8Array>,
  options: NdjsonOptions & { decoders: BlockDecoders; rawBlocks?: RawBlocksFilter | undefined },
): AsyncGenerator<DecodedBlock> {
  const queue: Promise<DecodedBlock>[] = [];
  const raw = ndjsonBlocks(body, options);
  for await (const block of options.rawBlocks ? options.rawBlocks(raw) : raw) {
    const decoded = options.decoders.decode(block);
    decoded.catch(() => undefined); // awaited in order below; unawaited only when reading stopped early
    queue.push(decoded);
    while (queue.length > MAX_BLOCKS_IN_FLIGHT) yield await queue.shift()!;
  }
  while (queue.length > 0) yield await queue.shift()!;
}
