import { canonicalJson } from '../schema/wire-format.js';
import { BodySink, hasDeliveryFaults } from './body-sink.js';
import type { DatasetEntry } from './dataset-snapshot.js';
import { cachePath, serveCached, teeToCache } from './export-cache.js';
import { hasRecordFaults, withRecordFaults, type BodyRecord } from './record-faults.js';
import { ifNoneMatchHits, sendNotModified } from './respond.js';
import { responseValidators, validatorHeaders, type RouteContext } from './route-context.js';

/**
 * `GET /reports.ndjson`: the whole export, one JSON object per line in dataset order, warts as their raw
 * line (docs/sources.md). Streamed in chunks of many lines with backpressure, never built whole.
 * `ETag`/`Last-Modified` of the data state; a matching `If-None-Match` answers 304. A regenerated export
 * (fault) starts at another record each time and ignores `Range` and `If-None-Match`.
 *
 * With `exportCacheDir`, an export served whole without faults is also written there, and later requests
 * for the same data state get that file (with `Content-Length`): the benchmark then measures the sync, not
 * the simulator generating 1M records per request (~6 s of one of the machine's two cores).
 */
export async function serveNdjson(ctx: RouteContext): Promise<void> {
  const { req, res, data, faults } = ctx;
  const validators = responseValidators(ctx);
  if (ctx.regeneration === 0 && validators.etag !== '' && ifNoneMatchHits(req, validators.etag)) {
    sendNotModified(res, validators);
    return;
  }
  const headers = {
    'Content-Type': 'application/x-ndjson',
    ...validatorHeaders(validators),
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
  const cached = cacheable ? cachePath(ctx.exportCacheDir!, validators.etag, 'export.ndjson') : undefined;
  if (cached !== undefined && (await serveCached(res, headers, cached))) return;
  const sink = BodySink.open(res, 200, headers, faults);
  const entries = data.exportEntries(0, Number.POSITIVE_INFINITY, ctx.regeneration);
  const lines = hasRecordFaults(faults)
    ? recordLines(withRecordFaults(entries, faults))
    : entryLines(entries);
  await sink.writeAll(cached === undefined ? lines : teeToCache(lines, cached, '\n'), '\n');
  await sink.end();
}

function* entryLines(entries: Iterable<DatasetEntry>): Generator<string> {
  for (const entry of entries) {
    yield entry.kind === 'report' ? canonicalJson(entry.report) : entry.raw;
  }
}

function* recordLines(records: Iterable<BodyRecord>): Generator<string> {
  for (const r of records) {
    if (r.kind === 'report') yield canonicalJson(r.report);
    else yield r.kind === 'wart' ? r.raw : r.text;
  }
}
