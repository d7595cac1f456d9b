import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { canonicalJson } from '../../schema/wire-format.js';
import { openExport, sendExport } from '../export-response.js';
import { publicQuery } from '../public-query.js';
import type { ReaderContext } from '../reader-context.js';
import { countsInTransaction, streamPage } from '../report-pages.js';

/**
 * `GET /api/v1/public/reports.ndjson` (our default NDJSON path, docs/sources.md): the whole current table, one
 * wire report (`toWire`) per line, each line ending in `\n`, in export order (`createdAt` ascending, then
 * `id`: creation order, as the upstream's export is). Takes no parameters. Read time bucket range by range
 * in order (report-pages.ts: no sort of the whole table before the first line) and sent while it is
 * written to a spool file (export-response.ts). `application/x-ndjson`, validators, 304.
 */
export function ndjsonRoute(ctx: ReaderContext): RouteHandlerMethod {
  const what = `GET ${PUBLIC_PATHS.ndjson}`;
  return async (request, reply) => {
    if (publicQuery('ndjson', request, reply) === null) return reply;
    const open = await openExport(ctx, request, reply, what, ctx.exportPool);
    if (open === null) return reply;
    const pages = { index: ctx.pageIndex, filter: {}, timeoutMs: ctx.config.readerQueryTimeoutMs, what };
    let counts;
    try {
      counts = await countsInTransaction(open.tx.connection, pages);
    } catch (err) {
      await open.tx.finish(false);
      throw err;
    }
    return sendExport(
      ctx,
      request,
      reply,
      open,
      { 'Content-Type': 'application/x-ndjson' },
      'ndjson',
      async function* () {
        for await (const reports of streamPage(open.tx.connection, pages, counts, 'oldest', { offset: 0 })) {
          let text = '';
          for (const report of reports) text += `${canonicalJson(report)}\n`;
          yield text;
        }
      },
    );
  };
}
