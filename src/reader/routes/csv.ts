import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { CSV_COLUMNS } from '../../schema/report.js';
import { toCsvRecords } from '../../schema/to-csv-records.js';
import { CsvRows } from '../csv-rows.js';
import { openExport, sendExport } from '../export-response.js';
import { readExportShape } from '../export-shape.js';
import { publicLink } from '../public-link.js';
import { publicQuery } from '../public-query.js';
import type { ReaderContext } from '../reader-context.js';
import { EXPORT_ORDER_SQL, REPORT_COLUMNS_SQL, reportWhere } from '../report-rows.js';
import { streamReports } from '../stream-reports.js';

/**
 * `GET /api/v1/public/reports.csv?pageSize=&page=`: one page of the CSV export (seed rule 2: `pageSize` rows
 * per page, default 1000; `page` 1-based). Every page starts with the header row (`CSV_COLUMNS`, then the
 * extra columns, see export-shape.ts), then rows `(page-1)*pageSize …` in export order (`createdAt`
 * ascending, then `id`). RFC 4180 quoting and CRLF after every record (`toCsvRecords`), cells by
 * `reportCsvCells`, exactly as the simulator writes them. `Link: <…>; rel="next"` (RFC 8288; absolute only from a trusted base, see public-link.ts) while a
 * later page exists; a page past the end holds the header only. Served directly (no redirect: clients that follow
 * redirects need none). `text/csv; charset=utf-8`, validators, 304.
 */
export function csvRoute(ctx: ReaderContext): RouteHandlerMethod {
  const what = `GET ${PUBLIC_PATHS.csv}`;
  return async (request, reply) => {
    const query = publicQuery('csv', request, reply, ctx.config.readerCsvMaxPageSize);
    if (query === null) return reply;
    const open = await openExport(ctx, request, reply, what);
    if (open === null) return reply;
    const { tx, validators } = open;
    const timeoutMs = ctx.config.readerQueryTimeoutMs;
    let shape;
    try {
      shape = await ctx.cache.get(validators.etag, 'exportShape', () =>
        readExportShape(tx.connection, timeoutMs),
      );
    } catch (err) {
      await tx.finish(false);
      throw err;
    }
    const { pageSize, page } = query;
    const headers: Record<string, string> = { 'Content-Type': 'text/csv; charset=utf-8' };
    if (page * pageSize < shape.count) {
      const next = `${PUBLIC_PATHS.csv}?pageSize=${pageSize}&page=${page + 1}`;
      headers.Link = `<${publicLink(ctx.config, request, next)}>; rel="next"`;
    }
    const where = reportWhere();
    const sql = `SELECT ${REPORT_COLUMNS_SQL} FROM reports ${where.sql}
      ORDER BY ${EXPORT_ORDER_SQL} LIMIT $limit OFFSET $offset`;
    const params = { ...where.params, limit: BigInt(pageSize), offset: BigInt((page - 1) * pageSize) };
    const { extraColumns } = shape;
    const rows = new CsvRows(extraColumns);
    const key = JSON.stringify(['csv', pageSize, page]);
    return sendExport(ctx, request, reply, open, headers, key, async function* () {
      yield toCsvRecords([[...CSV_COLUMNS, ...extraColumns]]);
      for await (const reports of streamReports(tx.connection, sql, params, timeoutMs, what)) {
        // Row by row, in pieces of about 64 KiB: with many extra columns one row alone can be wide, and a
        // whole chunk of such rows as one string would scale with columns × rows.
        let text = '';
        for (const report of reports) {
          text += rows.row(report);
          if (text.length >= 65_536) {
            yield text;
            text = '';
          }
        }
        if (text !== '') yield text;
      }
    });
  };
}
