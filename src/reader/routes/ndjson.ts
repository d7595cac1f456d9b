import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { canonicalJson } from '../../schema/report.js';
import { openExport, sendExport } from '../export-response.js';
import { publicQuery } from '../public-query.js';
import type { ReaderContext } from '../reader-context.js';
import { EXPORT_ORDER_SQL, REPORT_COLUMNS_SQL, reportWhere } from '../report-rows.js';
import { streamReports } from '../stream-reports.js';

/**
 * `GET /api/v1/public/reports.ndjson` (our default NDJSON path, DESIGN.md §2): the whole current table, one
 * wire report (`toWire`) per line, each line ending in `\n`, in export order (`createdAt` ascending, then
 * `id`: creation order, as the upstream's export is). Takes no parameters. Streamed one DuckDB chunk at a
 * time through a spool file (export-response.ts). `application/x-ndjson`, validators, 304.
 */
export function ndjsonRoute(ctx: ReaderContext): RouteHandlerMethod {
  const what = `GET ${PUBLIC_PATHS.ndjson}`;
  return async (request, reply) => {
    if (publicQuery('ndjson', request, reply) === null) return reply;
    const open = await openExport(ctx, request, reply, what);
    if (open === null) return reply;
    const where = reportWhere();
    const sql = `SELECT ${REPORT_COLUMNS_SQL} FROM reports ${where.sql} ORDER BY ${EXPORT_ORDER_SQL}`;
    const timeoutMs = ctx.config.readerQueryTimeoutMs;
    return sendExport(
      ctx,
      request,
      reply,
      open,
      { 'Content-Type': 'application/x-ndjson' },
      'ndjson',
      async function* () {
        for await (const reports of streamReports(open.tx.connection, sql, where.params, timeoutMs, what)) {
          let text = '';
          for (const report of reports) text += `${canonicalJson(report)}\n`;
          yield text;
        }
      },
    );
  };
}
