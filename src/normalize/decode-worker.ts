// A decode worker (see decoders.ts): rebuilds the run's known-line set from shared memory, then decodes each
// NDJSON block or CSV page it is sent and posts the result back, transferring the encoded lines.
import { parentPort, workerData } from 'node:worker_threads';
import type { ExtraLimits } from '../schema/value-rules.js';
import { KnownLines, loadLineHasher, type KnownLinesState } from './known-lines.js';
import { SyncError } from '../util/errors.js';
import { decodeCsvPage } from './csv-page-decode.js';
import type { DecodeJob, DecodeReply } from './decoders.js';
import { decodeBlock } from './ndjson-block.js';
import type { DecodedBlock } from './reject.js';

const { known, rawMaxBytes, limits } = workerData as {
  known: KnownLinesState;
  rawMaxBytes: number;
  limits: ExtraLimits;
};
// Jobs wait for the hasher (instantiated asynchronously); they still run in the order they came.
const ready = loadLineHasher().then(() => KnownLines.fromState(known));

parentPort?.on('message', (job: DecodeJob) => {
  ready.then(
    (set) => handle(job, set),
    (err: unknown) => fail(job, err),
  );
});

function handle(job: DecodeJob, set: KnownLines): void {
  let reply: DecodeReply;
  let block: DecodedBlock;
  try {
    if (job.kind === 'ndjson') {
      block = decodeBlock(job.block, set, rawMaxBytes, limits);
      reply = { id: job.id, kind: 'ndjson', result: block };
    } else {
      const result = decodeCsvPage(job.body, job.options, set);
      block = result.block;
      reply = { id: job.id, kind: 'csv', result };
    }
  } catch (err) {
    fail(job, err);
    return;
  }
  parentPort?.postMessage(reply, [block.rows.bytes.buffer, block.seen.bytes.buffer] as ArrayBuffer[]);
}

function fail(job: DecodeJob, err: unknown): void {
  // A SyncError (a CSV page cut short, a bad header) is an answer about the input: sent back whole.
  const error =
    err instanceof SyncError
      ? { sync: true, code: err.code, message: err.message, context: err.context, retry: err.retry }
      : { message: err instanceof Error ? err.message : String(err) };
  try {
    parentPort?.postMessage({ id: job.id, error } satisfies DecodeReply);
  } catch {
    // A context that cannot be cloned: the message alone still answers the job.
    parentPort?.postMessage({ id: job.id, error: { message: error.message } } satisfies DecodeReply);
  }
}
