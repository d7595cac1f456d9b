// A decode worker (see decoders.ts): loads its modules and the line hasher as soon as it starts (it may be
// started before the run, decoder-threads.ts); its first message (`init`) gives the run's known-line set
// (shared memory) and limits; then it decodes each NDJSON block or CSV page it is sent and posts the result
// back, transferring the encoded lines.
import { parentPort } from 'node:worker_threads';
import type { ExtraLimits } from '../schema/value-rules.js';
import { setUpstreamReading } from '../schema/upstream-reading.js';
import { KnownLines, loadLineHasher } from './known-lines.js';
import { SyncError } from '../util/errors.js';
import { decodeCsvPage } from './csv-page-decode.js';
import type { DecodeInit, DecodeJob, DecodeReply } from './decoders.js';
import { decodeBlock } from './ndjson-block.js';
import type { DecodedBlock } from './reject.js';

interface RunContext {
  set: KnownLines;
  rawMaxBytes: number;
  limits: ExtraLimits;
}

const hasher = loadLineHasher();
let run: Promise<RunContext> | undefined;

// Jobs wait for the hasher (instantiated asynchronously); they still run in the order they came.
parentPort?.on('message', (message: DecodeInit | DecodeJob) => {
  if (message.kind === 'init') {
    const { known, rawMaxBytes, limits, reading } = message;
    setUpstreamReading(reading);
    run = hasher.then(() => ({ set: KnownLines.fromState(known), rawMaxBytes, limits }));
    return;
  }
  if (run === undefined) {
    fail(message, new Error('decode worker: a job came before its init message'));
    return;
  }
  run.then(
    (context) => handle(message, context),
    (err: unknown) => fail(message, err),
  );
});

function handle(job: DecodeJob, { set, rawMaxBytes, limits }: RunContext): void {
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
