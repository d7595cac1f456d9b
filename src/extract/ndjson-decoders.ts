import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { KnownLines } from '../sync/known-lines.js';
import { packageRoot } from '../util/package-root.js';
import { decodeBlock, type DecodedBlock, type NdjsonBlock } from './ndjson-block.js';

/** Decodes {@link NdjsonBlock}s, in worker threads or inline; results may arrive out of order. */
export interface BlockDecoders {
  /** Worker threads in use (0: blocks are decoded on the calling thread). */
  readonly workers: number;
  /** @throws the worker's error (a bug: decoding itself never throws for bad input). */
  decode(block: NdjsonBlock): Promise<DecodedBlock>;
  /** Stops the workers; pending decodes reject. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts `workers` NDJSON decode threads sharing `known` (issue #7: parsing, validating and serialising a
 * record costs ~10 µs of JavaScript; on the main thread alone that bounded a 1M-record sync). With 0, or
 * when the worker script is not built (tests running the TypeScript sources before `npm run build`),
 * blocks are decoded inline.
 *
 * @param rawMaxBytes raw text kept per malformed line (bytes)
 */
export function startDecoders(workers: number, known: KnownLines, rawMaxBytes: number): BlockDecoders {
  const script = workerScript();
  if (workers === 0 || script === undefined) {
    return {
      workers: 0,
      decode: async (block) => decodeBlock(block, known, rawMaxBytes),
      close: async () => undefined,
    };
  }
  const pending = new Map<number, { resolve: (r: DecodedBlock) => void; reject: (e: Error) => void }>();
  let nextId = 0;
  let closed = false;
  const failAll = (err: Error) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  const threads = Array.from({ length: workers }, () => {
    const worker = new Worker(script, { workerData: { known: known.state(), rawMaxBytes } });
    worker.on('message', (m: { id: number; result?: DecodedBlock; error?: string }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.result) p.resolve(m.result);
      else p.reject(new Error(`NDJSON decode worker failed: ${m.error}`));
    });
    worker.on('error', (err) => failAll(err));
    worker.on('exit', (code) => {
      if (!closed) failAll(new Error(`NDJSON decode worker exited with code ${code}`));
    });
    return worker;
  });
  return {
    workers,
    decode(block) {
      if (closed) return Promise.reject(new Error('NDJSON decoders are closed'));
      const id = nextId++;
      return new Promise<DecodedBlock>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        const transfer = [
          block.bytes.buffer,
          block.offsets.buffer,
          block.lineNumbers.buffer,
        ] as ArrayBuffer[];
        threads[id % threads.length]!.postMessage({ id, block }, transfer);
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      failAll(new Error('NDJSON decoders closed'));
      await Promise.all(threads.map((t) => t.terminate()));
    },
  };
}

/** The built worker script beside this module, or in dist/ when running from the TypeScript sources. */
function workerScript(): string | undefined {
  const here = fileURLToPath(import.meta.url);
  const script = here.endsWith('.ts')
    ? join(packageRoot(), 'dist', 'src', 'extract', 'ndjson-worker.js')
    : join(here, '..', 'ndjson-worker.js');
  return existsSync(script) ? script : undefined;
}

/**
 * Packs whole lines into {@link NdjsonBlock}s of about `targetBytes` (a line's bytes are copied: the
 * splitter's views are only valid until the next line).
 */
export class BlockPacker {
  #bytes: Buffer;
  #used = 0;
  #offsets: number[] = [0];
  #lines: number[] = [];

  constructor(private readonly targetBytes = 1 << 20) {
    this.#bytes = Buffer.allocUnsafeSlow(targetBytes);
  }

  get count(): number {
    return this.#lines.length;
  }

  /** True once the block holds `targetBytes` or more. */
  get full(): boolean {
    return this.#used >= this.targetBytes;
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

  /** The block so far; the packer starts a new one. */
  take(): NdjsonBlock {
    const block: NdjsonBlock = {
      bytes: new Uint8Array(this.#bytes.buffer, this.#bytes.byteOffset, this.#used),
      offsets: Uint32Array.from(this.#offsets),
      lineNumbers: Float64Array.from(this.#lines),
      count: this.#lines.length,
    };
    this.#bytes = Buffer.allocUnsafeSlow(this.targetBytes);
    this.#used = 0;
    this.#offsets = [0];
    this.#lines = [];
    return block;
  }
}
