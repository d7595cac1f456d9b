import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { openExport } from '../export-response.js';
import { publicQuery } from '../public-query.js';
import type { ReaderContext } from '../reader-context.js';
import { validatorHeaders } from '../validators.js';
import { warehouseStats } from '../warehouse-stats.js';

/**
 * `GET /api/v1/public/reports/stats`: `{"total", "byStatus", "byDestination"}` over the current reports
 * (docs/sources.md; `computeStats`, keys sorted), so `total` is the number of reports the list pages through.
 * No parameters. Computed in one read transaction with its validators and cached per data state.
 */
export function statsRoute(ctx: ReaderContext): RouteHandlerMethod {
  return async (request, reply) => {
    if (publicQuery('stats', request, reply) === null) return reply;
    const open = await openExport(ctx, request, reply, `GET ${PUBLIC_PATHS.stats}`);
    if (open === null) return reply;
    let body: string;
    try {
      const stats = await ctx.cache.get(open.validators.etag, 'stats', () =>
        warehouseStats(open.tx.connection, ctx.config.readerQueryTimeoutMs),
      );
      body = JSON.stringify(stats);
      await open.tx.finish(true);
    } catch (err) {
      await open.tx.finish(false);
      throw err;
    }
    return reply
      .code(200)
      .header('Content-Type', 'application/json; charset=utf-8')
      .headers(validatorHeaders(open.validators))
      .send(body);
  };
}
