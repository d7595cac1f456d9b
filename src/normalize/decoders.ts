import { DEFAULT_EXTRA_LIMITS, type ExtraLimits } from '../schema/value-rules.js';
import { upstreamReading, type UpstreamReading } from '../schema/upstream-reading.js';
import type { NdjsonBlock } from '../extract/block-packer.js';
import type { CsvPageOptions } from '../extract/csv.js';
import { SyncError, type RetryScope, type SyncErrorCode } from '../util/errors.js';
import { decodeCsvPage, type DecodedCsvPage } from './csv-page-decode.js';
import { takeDecoderThread, workerScript } from './decoder-threads.js';
import type { KnownLines, KnownLinesState } from './known-lines.js';
import { decodeBlock } from './ndjson-block.js';
import type { DecodedBlock } from './reject.js';

/** Decodes NDJSON blocks and CSV pages, in worker threads or inline; results may arrive out of order. */
export interface BlockDecoders {
  /** Worker threads in use (0: everything is decoded on the calling thread). */
  readonly workers: number;
  /**
   * Decodes an NDJSON block ({@link decodeBlock}); its buffers are transferred (unusable afterwards).
   *
   * @throws the worker's error (a bug: decoding a block never throws for bad input)
   */
  decode(block: NdjsonBlock): Promise<DecodedBlock>;
  /**
   * Parses and decodes a CSV page ({@link decodeCsvPage}); `body`'s buffer is transferred.
   *
   * @throws SyncError as {@link decodeCsvPage} (`BODY_TRUNCATED` stays retryable)
   */
  decodePage(body: Uint8Array, options: CsvPageOptions): Promise<DecodedCsvPage>;
  /** Stops the workers; pending decodes reject. Idempotent. */
  close(): Promise<void>;
}

/** A decode worker's first message: what every job of its run decodes with. */
export interface DecodeInit {
  kind: 'init';
  known: KnownLinesState;
  rawMaxBytes: number;
  limits: ExtraLimits;
  /** The upstream's field names and time zone, as the run's thread has them (schema/upstream-reading.ts). */
  reading: UpstreamReading;
}

/** A message to a decode worker after its {@link DecodeInit}. */
export type DecodeJob =
  | { id: number; kind: 'ndjson'; block: NdjsonBlock }
  | { id: number; kind: 'csv'; body: Uint8Array; options: CsvPageOptions };

/** A decode worker's answer: a result, or an error (`sync`: a SyncError's JSON, rebuilt as one). */
export type DecodeReply =
  | { id: number; kind: 'ndjson'; result: DecodedBlock }
  | { id: number; kind: 'csv'; result: DecodedCsvPage }
  | {
      id: number;
      error: {
        message: string;
        sync?: boolean;
        code?: SyncErrorCode;
        context?: Record<string, unknown>;
        retry?: RetryScope;
      };
    };

/**
 * Starts `workers` decode threads sharing `known` (parsing, validating and serialising a record
 * costs ~10 µs of JavaScript for an NDJSON line on a quiet machine and about twice that for a CSV row;
 * on the main thread alone that bounded a 1M-record sync). With 0, or when the worker script is not built (tests running the TypeScript sources
 * before `npm run build`), everything is decoded inline. A CSV page decoded inline sets `known`'s context.
 *
 * @param rawMaxBytes raw text kept per malformed NDJSON line (bytes; CSV pages carry their own bound)
 * @param limits bounds on a record's unknown fields (NDJSON; CSV pages carry their own)
 */
export function startDecoders(
  workers: number,
  known: KnownLines,
  rawMaxBytes: number,
  limits: ExtraLimits = DEFAULT_EXTRA_LIMITS,
): BlockDecoders {
  const script = workerScript();
  if (workers === 0 || script === undefined) {
    return {
      workers: 0,
      decode: async (block) => decodeBlock(block, known, rawMaxBytes, limits),
      decodePage: async (body, options) => decodeCsvPage(body, options, known),
      close: async () => undefined,
    };
  }
  const init: DecodeInit = {
    kind: 'init',
    known: known.state(),
    rawMaxBytes,
    limits,
    reading: upstreamReading(),
  };
  return workerDecoders(script, workers, init);
}

/** A decode waiting for its worker's answer. */
interface PendingDecode {
  resolve: (r: unknown) => void;
  reject: (e: Error) => void;
}

/** {@link startDecoders} with `workers` threads running `script`, each started with `init`. */
function workerDecoders(script: string, workers: number, init: DecodeInit): BlockDecoders {
  const pending = new Map<number, PendingDecode>();
  let nextId = 0;
  let closed = false;
  // Once a worker dies, every decode fails with its error: a job posted to a dead thread never answers.
  let broken: Error | undefined;
  const failAll = (err: Error) => {
    broken ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const threads = Array.from({ length: workers }, () => {
    const worker = takeDecoderThread(script);
    worker.postMessage(init);
    worker.on('message', (m: DecodeReply) => settle(pending, m));
    worker.on('error', (err) => failAll(err));
    worker.on('exit', (code) => {
      if (!closed) failAll(new Error(`decode worker exited with code ${code}`));
    });
    return worker;
  });
  const post = <T>(job: DecodeJob, transfer: ArrayBuffer[]): Promise<T> => {
    if (closed) return Promise.reject(new Error('decoders are closed'));
    if (broken) return Promise.reject(broken);
    return new Promise<T>((resolve, reject) => {
      pending.set(job.id, { resolve: resolve as (r: unknown) => void, reject });
      threads[job.id % threads.length]!.postMessage(job, transfer);
    });
  };
  return {
    workers,
    decode(block) {
      const transfer = [block.bytes.buffer, block.offsets.buffer, block.lineNumbers.buffer];
      return post<DecodedBlock>({ id: nextId++, kind: 'ndjson', block }, transfer as ArrayBuffer[]);
    },
    decodePage(body, options) {
      return post<DecodedCsvPage>({ id: nextId++, kind: 'csv', body, options }, [body.buffer as ArrayBuffer]);
    },
    async close() {
      if (closed) return;
      closed = true;
      failAll(new Error('decoders closed'));
      await Promise.all(threads.map((t) => t.terminate()));
    },
  };
}

/** Settles the decode a worker answered: its result, or its error (a SyncError rebuilt as one). */
function settle(pending: Map<number, PendingDecode>, m: DecodeReply): void {
  const p = pending.get(m.id);
  if (!p) return;
  pending.delete(m.id);
  if ('result' in m) p.resolve(m.result);
  else if (m.error.sync) {
    const { code = 'DECODE_FAILED', message, context, retry = 'none' } = m.error;
    p.reject(new SyncError(code, message, { context: context ?? {}, retry }));
  } else p.reject(new Error(`decode worker failed: ${m.error.message}`));
}
