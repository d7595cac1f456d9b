import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { CSV_COLUMNS } from '../../schema/wire-format.js';
import { toCsvRecords } from '../../schema/to-csv-records.js';
import { CsvRows } from '../csv-rows.js';
import { openExport, sendExport } from '../export-response.js';
import { readExportShape, servedExtraKeys } from '../export-shape.js';
import { totalOf } from '../page-windows.js';
import { publicLink } from '../public-link.js';
import { publicQuery } from '../public-query.js';
import type { ReaderContext } from '../reader-context.js';
import { countsInTransaction, streamPage } from '../report-pages.js';

/**
 * `GET /api/v1/public/reports.csv?pageSize=&page=`: one page of the CSV export (docs/upstream-contract.md rule 2: `pageSize` rows
 * per page, default 1000; `page` 1-based). Every page starts with the header row (`CSV_COLUMNS`, then the
 * extra columns, see export-shape.ts), then rows `(page-1)*pageSize …` in export order (`createdAt`
 * ascending, then `id`), read from the few time buckets that hold them (report-pages.ts) and sent as they
 * are read, so any page's first bytes come as fast as the first page's. RFC 4180 quoting and CRLF after every record (`toCsvRecords`), cells by
 * `reportCsvCells`, exactly as the simulator writes them. `Link: <…>; rel="next"` (RFC 8288; absolute only from a trusted base, see public-link.ts) while a
 * later page exists; a page past the end holds the header only. Served directly (no redirect: clients that follow
 * redirects need none). `text/csv; charset=utf-8`, validators, 304.
 */
export function csvRoute(ctx: ReaderContext): RouteHandlerMethod {
  const what = `GET ${PUBLIC_PATHS.csv}`;
  return async (request, reply) => {
    const query = publicQuery('csv', request, reply, ctx.config.readerCsvMaxPageSize);
    if (query === null) return reply;
    const open = await openExport(ctx, request, reply, what, ctx.exportPool);
    if (open === null) return reply;
    const { tx, validators } = open;
    const timeoutMs = ctx.config.readerQueryTimeoutMs;
    const pages = { index: ctx.pageIndex, filter: {}, timeoutMs, what };
    let shape;
    let counts;
    try {
      counts = await countsInTransaction(tx.connection, pages);
      shape =
        counts === null
          ? await ctx.cache.get(validators.etag, 'exportShape', () =>
              readExportShape(tx.connection, timeoutMs),
            )
          : { count: totalOf(counts), extraColumns: await servedExtraKeys(tx.connection, timeoutMs) };
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
    const range = { offset: (page - 1) * pageSize, limit: pageSize };
    const { extraColumns } = shape;
    const rows = new CsvRows(extraColumns);
    const key = JSON.stringify(['csv', pageSize, page]);
    return sendExport(ctx, request, reply, open, headers, key, async function* () {
      yield toCsvRecords([[...CSV_COLUMNS, ...extraColumns]]);
      for await (const reports of streamPage(tx.connection, pages, counts, 'oldest', range)) {
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
