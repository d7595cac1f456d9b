import type { RouteHandlerMethod } from 'fastify';
import { openIncidents } from '../../alerts/alert-store.js';
import { withQueryTimeout } from '../query-timeout.js';
import type { ReaderContext } from '../reader-context.js';
import { ReadTransaction } from '../read-transaction.js';
import { readStatusData, type StatusData } from '../status-data.js';
import { renderStatusPage, type ScheduledJob } from '../status-html.js';
import { VersionCache } from '../version-cache.js';

/** Seconds between reloads of the status page. */
const REFRESH_SECONDS = 30;

/** The Content-Security-Policy of the operators' pages: nothing from outside, no script. */
const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/** The headers of an operators' page (the status page, a run page): HTML, never cached, {@link PAGE_CSP}. */
export const PAGE_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Cache-Control': 'no-cache',
  'Content-Security-Policy': PAGE_CSP,
} as const;

/**
 * `GET /`: the status page for the people who run the mirror (status-html.ts): open alerts, freshness and
 * schedule per job, charts over the last runs, the last 30 runs (each linked to its page), reports over
 * time by status, top reject reasons, the upstream `/stats` drift and unknown values. The warehouse
 * figures are read in one read transaction and kept until the next run finishes (any job: the run log
 * changes with every run), so reloads cost one small query (the open alerts, which the watchdog may raise
 * between runs); ages and next runs are computed at each render. `Content-Security-Policy` allows no
 * external resource at all.
 *
 * @param schedule the jobs' schedule, known to the daemon; `serve` passes none
 */
export function statusRoute(
  ctx: ReaderContext,
  schedule: (() => { timezone: string; jobs: readonly ScheduledJob[] }) | undefined,
): RouteHandlerMethod {
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
    const alerts = await ctx.pool.use((c) =>
      withQueryTimeout(c, ctx.config.readerQueryTimeoutMs, 'The status page', () => openIncidents(c)),
    );
    const html = renderStatusPage(data, {
      nowMs: Date.now(),
      schedule: schedule?.(),
      alerts: alerts.sort((a, b) => b.at.getTime() - a.at.getTime()),
      refreshSeconds: REFRESH_SECONDS,
      pool: ctx.pool.state,
    });
    return reply.code(200).headers(PAGE_HEADERS).send(html);
  };
}
