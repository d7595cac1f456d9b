import type { ListQuery } from '../schema/public-query.js';
import { canonicalJson } from '../schema/wire-format.js';
import { BodySink } from './body-sink.js';
import { ifNoneMatchHits, sendNotModified } from './respond.js';
import { responseValidators, type RouteContext } from './route-context.js';

/**
 * `GET /reports`: a JSON array of wire reports (valid, published), newest first (`createdAt` desc, then
 * `id` asc), `destination` and `status` AND-ed (docs/upstream-contract.md rule 1), no filter = the latest published reports
 * (rule 3). Pages are 1-based; a page past the end is `[]`. With the `ignorePage` fault, page 1 is
 * served whatever `page` says.
 */
export async function serveList(ctx: RouteContext, query: ListQuery): Promise<void> {
  const { req, res, data, faults } = ctx;
  const validators = responseValidators(ctx);
  if (ifNoneMatchHits(req, validators.etag)) {
    sendNotModified(res, validators);
    return;
  }
  const page = faults.ignorePage ? 1 : query.page;
  const reports = data.query(
    { destination: query.destination, status: query.status },
    (page - 1) * query.pageSize,
    query.pageSize,
  );
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    ETag: validators.etag,
    'Last-Modified': validators.lastModified,
  };
  await BodySink.sendWhole(res, 200, headers, `[${reports.map(canonicalJson).join(',')}]`, faults, ctx.head);
}
