import { BodySink } from './body-sink.js';
import { ifNoneMatchHits, sendNotModified } from './respond.js';
import { responseValidators, validatorHeaders, type RouteContext } from './route-context.js';

/**
 * `GET /reports/stats`: `{"total", "byStatus", "byDestination"}` over the valid, published reports
 * (computeStats; keys sorted), so `total` equals the number of reports the list pages through.
 */
export async function serveStats(ctx: RouteContext): Promise<void> {
  const { req, res, data, faults } = ctx;
  const validators = responseValidators(ctx);
  if (validators.etag !== '' && ifNoneMatchHits(req, validators.etag)) {
    sendNotModified(res, validators);
    return;
  }
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    ...validatorHeaders(validators),
  };
  await BodySink.sendWhole(res, 200, headers, JSON.stringify(data.stats()), faults, ctx.head);
}
