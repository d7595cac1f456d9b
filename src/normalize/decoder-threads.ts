import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { packageRoot } from '../util/package-root.js';

// Decode threads started before a run needs them. A thread spends ~0.5 s loading its modules and the line
// hasher (measured on this project's 2-core machine); started while the CLI opens the warehouse and loads
// the known-line hashes, that time no longer delays the first block. A thread waits for its `init` message
// (decoders.ts) before decoding anything.
const idle: Worker[] = [];

/**
 * Starts up to `workers` decode threads ahead of a run; `startDecoders` (decoders.ts) takes them before it
 * starts any of its own. Unclaimed threads never keep the process alive (they are unref'd) and are
 * forgotten when they fail. Does nothing when the worker script is not built. Idempotent up to `workers`.
 */
export function prestartDecoders(workers: number): void {
  const script = workerScript();
  if (script === undefined) return;
  while (idle.length < workers) {
    const worker = new Worker(script);
    worker.unref();
    const forget = () => {
      const at = idle.indexOf(worker);
      if (at >= 0) idle.splice(at, 1);
    };
    worker.once('error', forget).once('exit', forget);
    idle.push(worker);
  }
}

/** Prestarted decode threads not yet taken by a pool. */
export function idleDecoderThreads(): number {
  return idle.length;
}

/**
 * A decode thread for a pool: a prestarted one when there is one (its listeners cleared, ref'd again),
 * else a new one. The caller sends it its `init` message first.
 */
export function takeDecoderThread(script: string): Worker {
  const worker = idle.shift();
  if (worker === undefined) return new Worker(script);
  worker.removeAllListeners('error').removeAllListeners('exit');
  worker.ref();
  return worker;
}

/** The built worker script beside this module, or in dist/ when running from the TypeScript sources. */
export function workerScript(): string | undefined {
  const here = fileURLToPath(import.meta.url);
  const script = here.endsWith('.ts')
    ? join(packageRoot(), 'dist', 'src', 'normalize', 'decode-worker.js')
    : join(here, '..', 'decode-worker.js');
  return existsSync(script) ? script : undefined;
}
