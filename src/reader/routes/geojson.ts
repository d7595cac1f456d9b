import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { stringifyJson } from '../../schema/json-text.js';
import { FEATURE_COLLECTION_CLOSE, FEATURE_COLLECTION_OPEN, toFeature } from '../../schema/to-feature.js';
import { openExport, sendExport } from '../export-response.js';
import { publicQuery } from '../public-query.js';
import type { ReaderContext } from '../reader-context.js';
import { countsInTransaction, streamPage } from '../report-pages.js';

/**
 * `GET /api/v1/public/reports.geojson?destination=&status=`: an RFC 7946 `FeatureCollection` of `Point`
 * features (`[lng, lat]`, properties = the wire report without `location`, `toFeature`), one per current
 * report with a location, in list order (newest first) with the list's filters; no paging. Read time bucket
 * range by range (report-pages.ts) and sent while it is written to a spool file (export-response.ts). `application/geo+json; charset=utf-8`, validators and 304 as the
 * other endpoints.
 */
export function geojsonRoute(ctx: ReaderContext): RouteHandlerMethod {
  const what = `GET ${PUBLIC_PATHS.geojson}`;
  return async (request, reply) => {
    const query = publicQuery('geojson', request, reply);
    if (query === null) return reply;
    const open = await openExport(ctx, request, reply, what, ctx.exportPool);
    if (open === null) return reply;
    const filter = { destination: query.destination, status: query.status };
    const pages = { index: ctx.pageIndex, filter, timeoutMs: ctx.config.readerQueryTimeoutMs, what };
    let counts;
    try {
      counts = await countsInTransaction(open.tx.connection, pages);
    } catch (err) {
      await open.tx.finish(false);
      throw err;
    }
    const located = { offset: 0, extraWhere: 'lat IS NOT NULL AND lng IS NOT NULL' };
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
        for await (const reports of streamPage(open.tx.connection, pages, counts, 'newest', located)) {
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
