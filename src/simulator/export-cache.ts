import { createHash } from 'node:crypto';
import {
  closeSync,
  createReadStream,
  existsSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import type { ServerResponse } from 'node:http';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';

// The simulator's `--cache-exports`: a fault-free body (the NDJSON export, a CSV page) is written
// to a file the first time it is served, and later requests for the same data state get that file, so the
// benchmark measures the sync, not the simulator rendering records on the same two cores.

/** Where the body `name` (e.g. `export.ndjson`, `csv-5000-3.csv`) of the data state `etag` is cached. */
export function cachePath(dir: string, etag: string, name: string): string {
  return join(dir, `${createHash('sha1').update(etag).digest('hex')}-${name}`);
}

/**
 * Serves the cached file at `path` when there is one (200 with `headers` and its `Content-Length`, read in
 * 1 MiB pieces). Resolves true when it served, false when there is no such file. A client that leaves
 * mid-body is nothing to report.
 */
export async function serveCached(
  res: ServerResponse,
  headers: Record<string, string>,
  path: string,
): Promise<boolean> {
  if (!existsSync(path)) return false;
  res.writeHead(200, { ...headers, 'Content-Length': statSync(path).size });
  await pipeline(createReadStream(path, { highWaterMark: 1 << 20 }), res).catch(() => undefined);
  return true;
}

let partials = 0;

/**
 * Passes `pieces` through and writes each one followed by `suffix` (as `BodySink.writeAll` sends them) to
 * `path`, which appears by rename only when every piece went through. Each request writes its own temporary
 * file (written in ~1 MiB pieces), so concurrent requests never share or read a half-written one; a request
 * cut short leaves nothing.
 *
 * @throws a file-system error writing the temporary file (the request then fails, as any body error)
 */
export function* teeToCache(pieces: Iterable<string>, path: string, suffix = ''): Generator<string> {
  const partial = `${path}.${process.pid}.${++partials}.partial`;
  const fd = openSync(partial, 'w');
  let pending: string[] = [];
  let size = 0;
  const flush = () => {
    const bytes = Buffer.from(pending.join(''), 'utf8');
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    pending = [];
    size = 0;
  };
  let complete = false;
  try {
    for (const piece of pieces) {
      pending.push(piece, suffix);
      size += piece.length + suffix.length;
      if (size >= 1 << 20) flush();
      yield piece;
    }
    flush();
    complete = true;
  } finally {
    closeSync(fd);
    if (complete) {
      renameSync(partial, path);
      removeOtherStates(path);
    } else rmSync(partial, { force: true });
  }
}

/**
 * Removes the cached bodies of other data states than the one `path` holds: a request only ever asks for
 * the current state, so after a simulated day the previous exports are dead weight (4.7 GB an NDJSON export
 * of 10M reports). A request still streaming one keeps reading it (POSIX: an open file outlives its name);
 * files still being written (`.partial`) are left to their writers.
 */
function removeOtherStates(path: string): void {
  const dir = dirname(path);
  const state = basename(path).slice(0, basename(path).indexOf('-') + 1);
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(state) && !name.endsWith('.partial')) rmSync(join(dir, name), { force: true });
  }
}
