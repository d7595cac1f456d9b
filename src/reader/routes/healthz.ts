import type { RouteHandlerMethod } from 'fastify';
import type { LastSuccess } from '../last-success.js';
import type { ReaderContext } from '../reader-context.js';

/**
 * `GET /healthz`, answered from memory (the run state the reader keeps fresh in the background and the
 * pool's occupancy), never with a pool connection, so it stays fast while exports, lists and syncs load the
 * warehouse (a probe that times out gets a container restarted mid-sync):
 * - 200 `{"status":"ok"|"degraded","warehouse":"reachable","lastSuccessfulRun":{"runId","job","finishedAt"} | null,
 *   "pool":{"size","inUse","waiting","saturated"},"exportPool":{…}}` (`exportPool`: the connections that
 *   write export bodies) — `degraded` while every connection of `pool` is in use and requests wait (answers are slower or 503 `READER_BUSY`, but the process is sound: do not restart it);
 *   `lastSuccessfulRun` is the last successful run of any job (`finishedAt` ISO 8601 UTC; `null` before the
 *   first one);
 * - 503 `{"status":"unavailable","warehouse":"unreachable","error":{"code","message"}}` (with `Retry-After`)
 *   when the last warehouse read failed (the warehouse is closed or broken), until one succeeds again.
 */
export function healthzRoute(ctx: ReaderContext): RouteHandlerMethod {
  return async (_request, reply) => {
    const observed = ctx.validators.observed;
    const pool = ctx.pool.state;
    const exportPool = ctx.exportPool.state;
    reply.header('Cache-Control', 'no-store');
    if (observed.unreachable !== undefined) {
      return reply.code(503).header('Retry-After', '5').send({
        status: 'unavailable',
        warehouse: 'unreachable',
        error: observed.unreachable,
        pool,
        exportPool,
      });
    }
    return reply.code(200).send({
      status: pool.saturated ? 'degraded' : 'ok',
      warehouse: 'reachable',
      lastSuccessfulRun: runJson(observed.runs?.latest ?? null),
      pool,
      exportPool,
    });
  };
}

function runJson(run: LastSuccess | null) {
  return run === null
    ? null
    : { runId: run.runId, job: run.job, finishedAt: new Date(run.finishedMs).toISOString() };
}
