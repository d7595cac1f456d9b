import type { RouteHandlerMethod } from 'fastify';
import type { ReaderContext } from '../reader-context.js';

/**
 * `GET /metrics`: the Prometheus text format (prom-client's content type) of {@link ReaderContext.metrics},
 * with the warehouse figures read fresh for this scrape. A warehouse failure is a 503 from the error handler.
 */
export function metricsRoute(ctx: ReaderContext): RouteHandlerMethod {
  return async (_request, reply) => {
    await ctx.pool.use((c) => ctx.metrics.refresh(c, ctx.config.readerQueryTimeoutMs));
    const text = await ctx.metrics.registry.metrics();
    return reply.code(200).header('Content-Type', ctx.metrics.registry.contentType).send(text);
  };
}
