// An NDJSON decode worker (see ndjson-decoders.ts): rebuilds the run's known-line set from shared memory,
// then decodes each block it is sent and posts the result back, transferring the encoded lines.
import { parentPort, workerData } from 'node:worker_threads';
import { KnownLines, type KnownLinesState } from '../sync/known-lines.js';
import { decodeBlock, type NdjsonBlock } from './ndjson-block.js';

const { known, rawMaxBytes } = workerData as { known: KnownLinesState; rawMaxBytes: number };
const set = KnownLines.fromState(known);

parentPort?.on('message', (message: { id: number; block: NdjsonBlock }) => {
  try {
    const result = decodeBlock(message.block, set, rawMaxBytes);
    const transfer = [result.rows.bytes.buffer, result.seen.bytes.buffer] as ArrayBuffer[];
    parentPort?.postMessage({ id: message.id, result }, transfer);
  } catch (err) {
    parentPort?.postMessage({ id: message.id, error: err instanceof Error ? err.message : String(err) });
  }
});
