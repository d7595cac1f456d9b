import type { RouteHandlerMethod } from 'fastify';
import type { ReaderContext } from '../reader-context.js';
import { ReadTransaction } from '../read-transaction.js';
import { readStatusData, type StatusData } from '../status-data.js';
import { renderStatusPage } from '../status-html.js';
import { VersionCache } from '../version-cache.js';

/** Seconds between reloads of the status page. */
const REFRESH_SECONDS = 30;

/**
 * `GET /`: the status page for the people who run the mirror (status-html.ts): freshness per job (red past
 * its schedule period), the last 30 runs, reports over time by status, top reject reasons, the upstream
 * `/stats` drift and unknown values. The warehouse figures are read in one read transaction and kept until
 * the next run finishes (any job: the run log changes with every run), so reloads cost no query; ages are
 * computed at each render. `Content-Security-Policy` allows no external resource at all.
 *
 * @param periods schedule period per job name (ms), known to the daemon; `serve` passes none
 */
export function statusRoute(ctx: ReaderContext, periods: ReadonlyMap<string, number>): RouteHandlerMethod {
  const cache = new VersionCache();
  return async (request, reply) => {
    const runs = await ctx.validators.runs();
    const key = runs.logKey;
    const data = await cache.get(key, 'status', async (): Promise<StatusData> => {
      const tx = await ReadTransaction.begin(ctx.pool, ctx.config.readerQueryTimeoutMs);
      let ok = false;
      try {
        const read = await readStatusData(tx.connection, ctx.config.readerQueryTimeoutMs);
        ok = true;
        return read;
      } finally {
        await tx.finish(ok);
      }
    });
    const html = renderStatusPage(data, {
      nowMs: Date.now(),
      periods,
      refreshSeconds: REFRESH_SECONDS,
      pool: ctx.pool.state,
    });
    return reply
      .code(200)
      .headers({
        'Content-Type': 'text/html; charset=utf-8',
        'Cache-Control': 'no-cache',
        'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
      })
      .send(html);
  };
}
