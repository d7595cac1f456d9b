import type { GeojsonQuery } from '../schema/public-query.js';
import type { Report } from '../schema/wire-format.js';
import { stringifyJson } from '../schema/json-text.js';
import { FEATURE_COLLECTION_CLOSE, FEATURE_COLLECTION_OPEN, toFeature } from '../schema/to-feature.js';
import { BodySink } from './body-sink.js';
import { ifNoneMatchHits, sendNotModified } from './respond.js';
import { responseValidators, type RouteContext } from './route-context.js';

/**
 * `GET /reports.geojson`: an RFC 7946 `FeatureCollection` of `Point` features (`coordinates: [lng, lat]`),
 * one per valid, published report with a location, in list order (newest first) and with the list's
 * filters. `properties` is the wire report without `location`; the feature `id` is the report id. No
 * paging: the whole filtered set, streamed in chunks.
 */
export async function serveGeojson(ctx: RouteContext, query: GeojsonQuery): Promise<void> {
  const { req, res, data, faults } = ctx;
  const validators = responseValidators(ctx);
  if (ifNoneMatchHits(req, validators.etag)) {
    sendNotModified(res, validators);
    return;
  }
  const headers = {
    'Content-Type': 'application/geo+json; charset=utf-8',
    ETag: validators.etag,
    'Last-Modified': validators.lastModified,
  };
  if (ctx.head) {
    res.writeHead(200, headers);
    res.end();
    return;
  }
  const sink = BodySink.open(res, 200, headers, faults);
  await sink.writeAll(pieces(data.queryAll({ destination: query.destination, status: query.status })));
  await sink.end();
}

function* pieces(reports: Iterable<Report>): Generator<string> {
  yield FEATURE_COLLECTION_OPEN;
  let first = true;
  for (const report of reports) {
    if (report.lat === null || report.lng === null) continue;
    yield `${first ? '' : ','}${stringifyJson(toFeature(report))}`;
    first = false;
  }
  yield FEATURE_COLLECTION_CLOSE;
}
