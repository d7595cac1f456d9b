import type { RouteHandlerMethod } from 'fastify';
import { withQueryTimeout } from '../query-timeout.js';
import type { ReaderContext } from '../reader-context.js';
import { readRunDetail } from '../run-details.js';
import { renderRunPage, renderRunNotFound } from '../run-page-html.js';
import { PAGE_HEADERS } from './status.js';

/**
 * `GET /runs/<run id>`: one run's page (run-page-html.ts): outcome, error, counters, timings, rejects by
 * issue code and path with raw examples, drift, data-quality flags and the alerts it raised. 404 (an HTML
 * page linking back to the status page) for a run the run log does not hold.
 */
export function runPageRoute(ctx: ReaderContext): RouteHandlerMethod {
  return async (request, reply) => {
    const { runId } = request.params as { runId: string };
    const detail = await ctx.pool.use((c) =>
      withQueryTimeout(c, ctx.config.readerQueryTimeoutMs, 'The run page', () => readRunDetail(c, runId)),
    );
    return reply
      .code(detail ? 200 : 404)
      .headers(PAGE_HEADERS)
      .send(detail ? renderRunPage(detail, Date.now()) : renderRunNotFound(runId));
  };
}
