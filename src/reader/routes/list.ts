import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { toWire } from '../../schema/report.js';
import { lastSuccess } from '../last-success.js';
import { publicQuery } from '../public-query.js';
import { withQueryTimeout } from '../query-timeout.js';
import type { ReaderContext } from '../reader-context.js';
import { NEWEST_FIRST_SQL, REPORT_COLUMNS_SQL, reportWhere, rowToReport } from '../report-rows.js';
import { ifNoneMatchHits, validatorHeaders, validatorsOf } from '../validators.js';

/**
 * `GET /api/v1/public/reports?destination=&status=&pageSize=&page=` from the warehouse: a JSON array of wire
 * reports (`toWire`, upstream field names, extras included), newest first (`createdAt` desc, then `id`;
 * DESIGN.md §2), `destination` and `status` AND-ed (seed rule 1), no filter = the latest reports (rule 3),
 * removed reports left out. Pages are 1-based, default `pageSize` 50; a page past the end is `[]`.
 * `ETag`/`Last-Modified` of the last successful run; a matching `If-None-Match` answers 304.
 *
 * The validators are read before the page (two autocommit queries, no transaction: the cheapest path for
 * the busiest endpoint). A run committing in between labels a new page with the old tag, which only costs
 * the client one more full answer later; the reverse order could pin a stale page under a new tag.
 */
export function listRoute(ctx: ReaderContext): RouteHandlerMethod {
  const what = `The list query of GET ${PUBLIC_PATHS.list}`;
  return async (request, reply) => {
    const query = publicQuery('list', request, reply, ctx.config.readerListMaxPageSize);
    if (query === null) return reply;
    const timeoutMs = ctx.config.readerQueryTimeoutMs;
    const where = reportWhere(query);
    const sql = `SELECT ${REPORT_COLUMNS_SQL} FROM reports ${where.sql}
      ORDER BY ${NEWEST_FIRST_SQL} LIMIT $limit OFFSET $offset`;
    const answer = await ctx.pool.use(async (c) => {
      const validators = validatorsOf(await withQueryTimeout(c, timeoutMs, what, () => lastSuccess(c)));
      if (ifNoneMatchHits(request.headers['if-none-match'], validators.etag))
        return { validators, body: null };
      const rows = await withQueryTimeout(c, timeoutMs, what, () =>
        c.runAndReadAll(sql, {
          ...where.params,
          limit: BigInt(query.pageSize),
          offset: BigInt((query.page - 1) * query.pageSize),
        }),
      );
      return { validators, body: JSON.stringify(rows.getRows().map((row) => toWire(rowToReport(row)))) };
    });
    if (answer.body === null) return reply.code(304).headers(validatorHeaders(answer.validators)).send();
    return reply
      .code(200)
      .header('Content-Type', 'application/json; charset=utf-8')
      .headers(validatorHeaders(answer.validators))
      .send(answer.body);
  };
}
