import { createHash } from 'node:crypto';
import { createReadStream, existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { toWire } from '../schema/report.js';
import { LineFile } from '../util/line-file.js';
import { BodySink, hasDeliveryFaults } from './body-sink.js';
import type { DatasetEntry } from './dataset.js';
import { hasRecordFaults, withRecordFaults, type BodyRecord } from './record-faults.js';
import { ifNoneMatchHits, sendNotModified } from './respond.js';
import { responseValidators, type RouteContext } from './route-context.js';

/**
 * `GET /reports.ndjson`: the whole export, one JSON object per line in dataset order, warts as their raw
 * line (DESIGN.md §2–3). Streamed in chunks of many lines with backpressure, never built whole.
 * `ETag`/`Last-Modified` of the data state; a matching `If-None-Match` answers 304. A regenerated export
 * (fault) starts at another record each time and ignores `Range` and `If-None-Match`.
 *
 * With `exportCacheDir`, an export served whole without faults is also written there, and later requests
 * for the same data state get that file (with `Content-Length`): the benchmark then measures the sync, not
 * the simulator generating 1M records per request (~6 s of one of the machine's two cores, issue #7).
 */
export async function serveNdjson(ctx: RouteContext): Promise<void> {
  const { req, res, data, faults } = ctx;
  const validators = responseValidators(ctx);
  if (ctx.regeneration === 0 && ifNoneMatchHits(req, validators.etag)) {
    sendNotModified(res, validators);
    return;
  }
  const headers = {
    'Content-Type': 'application/x-ndjson',
    ETag: validators.etag,
    'Last-Modified': validators.lastModified,
    'Cache-Control': 'no-cache',
  };
  if (ctx.head) {
    res.writeHead(200, headers);
    res.end();
    return;
  }
  const cacheable =
    ctx.exportCacheDir !== undefined &&
    ctx.regeneration === 0 &&
    !hasRecordFaults(faults) &&
    !hasDeliveryFaults(faults);
  const cached = cacheable ? cachePath(ctx.exportCacheDir!, validators.etag) : undefined;
  if (cached !== undefined && existsSync(cached)) {
    res.writeHead(200, { ...headers, 'Content-Length': statSync(cached).size });
    await pipeline(createReadStream(cached, { highWaterMark: 1 << 20 }), res).catch(() => undefined); // client gone: nothing to do
    return;
  }
  const sink = BodySink.open(res, 200, headers, faults);
  const entries = data.exportEntries(0, Number.POSITIVE_INFINITY, ctx.regeneration);
  const lines = hasRecordFaults(faults)
    ? recordLines(withRecordFaults(entries, faults))
    : entryLines(entries);
  await sink.writeAll(cached === undefined ? lines : teeToCache(lines, cached), '\n');
  await sink.end();
}

function cachePath(dir: string, etag: string): string {
  return join(dir, `export-${createHash('sha1').update(etag).digest('hex')}.ndjson`);
}

let partials = 0;

/**
 * Passes `lines` through and writes them to `path`, which appears only when every line went through; each
 * request writes its own temporary file (two concurrent first requests never share one).
 */
function* teeToCache(lines: Iterable<string>, path: string): Generator<string> {
  const partial = `${path}.${process.pid}.${++partials}.partial`;
  const file = new LineFile(partial);
  let complete = false;
  try {
    for (const line of lines) {
      file.write(line);
      yield line;
    }
    complete = true;
  } finally {
    file.close();
    if (complete) renameSync(partial, path);
    else rmSync(partial, { force: true });
  }
}

function* entryLines(entries: Iterable<DatasetEntry>): Generator<string> {
  for (const entry of entries) {
    yield entry.kind === 'report' ? JSON.stringify(toWire(entry.report)) : entry.raw;
  }
}

function* recordLines(records: Iterable<BodyRecord>): Generator<string> {
  for (const r of records) {
    if (r.kind === 'report') yield JSON.stringify(toWire(r.report));
    else yield r.kind === 'wart' ? r.raw : r.text;
  }
}
