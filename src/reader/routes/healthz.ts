import type { RouteHandlerMethod } from 'fastify';
import { errorMessage, isSyncError } from '../../util/errors.js';
import { lastSuccess } from '../last-success.js';
import { withQueryTimeout } from '../query-timeout.js';
import type { ReaderContext } from '../reader-context.js';

/**
 * `GET /healthz`: whether the warehouse answers a query, and the last successful run.
 * - 200 `{"status":"ok","warehouse":"reachable","lastSuccessfulRun":{"runId","job","finishedAt"} | null}`
 *   (`finishedAt` ISO 8601 UTC; `null` before the first successful run: the reader then serves empty answers);
 * - 503 `{"status":"unavailable","warehouse":"unreachable","error":{"code","message"}}` when the query fails
 *   or passes REPORTS_READER_QUERY_TIMEOUT_MS. The failure is logged with its cause; the body names only
 *   its code.
 */
export function healthzRoute(ctx: ReaderContext): RouteHandlerMethod {
  return async (request, reply) => {
    try {
      const last = await ctx.pool.use((c) =>
        withQueryTimeout(c, ctx.config.readerQueryTimeoutMs, 'The health check', () => lastSuccess(c)),
      );
      return reply.code(200).send({
        status: 'ok',
        warehouse: 'reachable',
        lastSuccessfulRun:
          last === null
            ? null
            : { runId: last.runId, job: last.job, finishedAt: new Date(last.finishedMs).toISOString() },
      });
    } catch (err) {
      request.log.warn({ err }, 'health check: warehouse unreachable');
      const code = isSyncError(err) ? err.code : 'WAREHOUSE_UNREACHABLE';
      const message = isSyncError(err)
        ? errorMessage(err)
        : 'The warehouse did not answer a query; see the reader log.';
      return reply
        .code(503)
        .header('Retry-After', '5')
        .send({ status: 'unavailable', warehouse: 'unreachable', error: { code, message } });
    }
  };
}
