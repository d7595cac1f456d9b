import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { stringifyJson } from '../../schema/json-text.js';
import { FEATURE_COLLECTION_CLOSE, FEATURE_COLLECTION_OPEN, toFeature } from '../../schema/to-feature.js';
import { openExport, sendExport } from '../export-response.js';
import { publicQuery } from '../public-query.js';
import type { ReaderContext } from '../reader-context.js';
import { NEWEST_FIRST_SQL, REPORT_COLUMNS_SQL, reportWhere } from '../report-rows.js';
import { streamReports } from '../stream-reports.js';

/**
 * `GET /api/v1/public/reports.geojson?destination=&status=`: an RFC 7946 `FeatureCollection` of `Point`
 * features (`[lng, lat]`, properties = the wire report without `location`, `toFeature`), one per current
 * report with a location, in list order (newest first) with the list's filters; no paging. Streamed one
 * DuckDB chunk at a time through a spool file (export-response.ts). `application/geo+json; charset=utf-8`, validators and 304 as the
 * other endpoints.
 */
export function geojsonRoute(ctx: ReaderContext): RouteHandlerMethod {
  const what = `GET ${PUBLIC_PATHS.geojson}`;
  return async (request, reply) => {
    const query = publicQuery('geojson', request, reply);
    if (query === null) return reply;
    const open = await openExport(ctx, request, reply, what);
    if (open === null) return reply;
    const where = reportWhere(query);
    const sql = `SELECT ${REPORT_COLUMNS_SQL} FROM reports ${where.sql}
      AND lat IS NOT NULL AND lng IS NOT NULL ORDER BY ${NEWEST_FIRST_SQL}`;
    const timeoutMs = ctx.config.readerQueryTimeoutMs;
    return sendExport(
      ctx,
      request,
      reply,
      open,
      { 'Content-Type': 'application/geo+json; charset=utf-8' },
      JSON.stringify(['geojson', query.destination, query.status]),
      async function* () {
        yield FEATURE_COLLECTION_OPEN;
        let first = true;
        for await (const reports of streamReports(open.tx.connection, sql, where.params, timeoutMs, what)) {
          let text = '';
          for (const report of reports) {
            text += `${first ? '' : ','}${stringifyJson(toFeature(report))}`;
            first = false;
          }
          yield text;
        }
        yield FEATURE_COLLECTION_CLOSE;
      },
    );
  };
}
