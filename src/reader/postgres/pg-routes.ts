import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { Config } from '../../config/config.js';
import { stringifyJson } from '../../schema/json-text.js';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { CSV_COLUMNS, canonicalJson, type Report } from '../../schema/wire-format.js';
import { statsOfGroups } from '../../schema/stats.js';
import { toCsvRecords } from '../../schema/to-csv-records.js';
import { FEATURE_COLLECTION_CLOSE, FEATURE_COLLECTION_OPEN, toFeature } from '../../schema/to-feature.js';
import { CsvRows } from '../csv-rows.js';
import { sendExport } from '../export-response.js';
import { publicLink } from '../public-link.js';
import { publicQuery } from '../public-query.js';
import type { ResponseCache } from '../response-cache.js';
import type { SpoolCache } from '../spool-cache.js';
import { replyNotModified, validatorHeaders, type Validators } from '../validators.js';
import type { VersionCache } from '../version-cache.js';
import type { PgListPages } from './pg-list-pages.js';
import type { PgReaderPool } from './pg-pool.js';
import { pgValidators, type PgReaderQueries } from './pg-queries.js';
import { openPgSnapshot, type PgSnapshot } from './pg-snapshot.js';
import type { PgCurrentState } from './pg-validators.js';

/** What the PostgreSQL reader's routes share: pools, queries, the state and the per-state caches. */
export interface PgReaderContext {
  /** Connections for list pages and small reads (REPORTS_READER_CONNECTIONS). */
  pool: PgReaderPool;
  /** Connections held while an export body is spooled (REPORTS_READER_EXPORT_CONNECTIONS). */
  exportPool: PgReaderPool;
  queries: PgReaderQueries;
  /** List pages by keyset seeks from the anchors of the current published state. */
  listPages: PgListPages;
  config: Config;
  current: PgCurrentState;
  /** Stats, CSV row count and extra columns of one published state. */
  cache: VersionCache;
  /** List page bodies of one published state. */
  pages: ResponseCache;
  spools: SpoolCache;
}

/**
 * `GET /api/v1/public/reports` from PostgreSQL: the DuckDB reader's answer (routes/list.ts: validation,
 * order, paging, `toWire` bodies, validators, 304), each page read with its published state in one
 * statement, so its `ETag` is the state its rows come from.
 */
export function pgListRoute(ctx: PgReaderContext): RouteHandlerMethod {
  return async (request, reply) => {
    const query = publicQuery('list', request, reply, ctx.config.readerListMaxPageSize);
    if (query === null) return reply;
    const validators = await ctx.current.get();
    if (replyNotModified(request, reply, validators)) return reply;
    const filter = { destination: query.destination, status: query.status };
    const key = JSON.stringify([query.destination, query.status, query.pageSize, query.page]);
    // The cached text carries the tag of the state its rows were read in (the first line): a publish
    // committed since the cached state was read gives a body of the newer state, under the newer tag.
    const cached = await ctx.pages.get(validators.etag, key, async () => {
      const page = await ctx.pool.use((c) => ctx.listPages.page(c, filter, query.page, query.pageSize));
      const tagged = pgValidators(page.state);
      const body = `[${page.reports.map((report) => canonicalJson(report)).join(',')}]`;
      return `${JSON.stringify(tagged)}\n${body}`;
    });
    const newline = cached.indexOf('\n');
    const seen = JSON.parse(cached.slice(0, newline)) as Validators;
    return reply
      .code(200)
      .header('Content-Type', 'application/json; charset=utf-8')
      .headers(validatorHeaders(seen))
      .send(cached.slice(newline + 1));
  };
}

/** `GET /api/v1/public/reports/stats` from PostgreSQL, computed once per published state. */
export function pgStatsRoute(ctx: PgReaderContext): RouteHandlerMethod {
  return async (request, reply) => {
    if (publicQuery('stats', request, reply) === null) return reply;
    const snap = await openPgSnapshot(ctx.pool, ctx.queries, request, reply);
    if (snap === null) return reply;
    let body: string;
    try {
      const stats = await ctx.cache.get(snap.validators.etag, 'stats', async () =>
        statsOfGroups(await ctx.queries.statsGroups(snap.client)),
      );
      body = JSON.stringify(stats);
      await snap.tx.finish(true);
    } catch (err) {
      await snap.tx.finish(false);
      throw err;
    }
    return reply
      .code(200)
      .header('Content-Type', 'application/json; charset=utf-8')
      .headers(validatorHeaders(snap.validators))
      .send(body);
  };
}

/** `GET /api/v1/public/reports.ndjson` from PostgreSQL: every current report in export order. */
export function pgNdjsonRoute(ctx: PgReaderContext): RouteHandlerMethod {
  return async (request, reply) => {
    if (publicQuery('ndjson', request, reply) === null) return reply;
    const snap = await openPgSnapshot(ctx.exportPool, ctx.queries, request, reply);
    if (snap === null) return reply;
    const stream = ctx.queries.stream(snap.client, {}, { order: 'oldest' });
    return send(ctx, request, reply, snap, 'application/x-ndjson', 'ndjson', async function* () {
      for await (const reports of stream) yield lines(reports, (r) => `${canonicalJson(r)}\n`);
    });
  };
}

/** `GET /api/v1/public/reports.geojson` from PostgreSQL: located reports of the filter, newest first. */
export function pgGeojsonRoute(ctx: PgReaderContext): RouteHandlerMethod {
  return async (request, reply) => {
    const query = publicQuery('geojson', request, reply);
    if (query === null) return reply;
    const snap = await openPgSnapshot(ctx.exportPool, ctx.queries, request, reply);
    if (snap === null) return reply;
    const filter = { destination: query.destination, status: query.status };
    const stream = ctx.queries.stream(snap.client, filter, { order: 'newest', located: true });
    const key = JSON.stringify(['geojson', query.destination, query.status]);
    return send(ctx, request, reply, snap, 'application/geo+json; charset=utf-8', key, async function* () {
      yield FEATURE_COLLECTION_OPEN;
      let first = true;
      for await (const reports of stream) {
        yield lines(reports, (r) => {
          const text = `${first ? '' : ','}${stringifyJson(toFeature(r))}`;
          first = false;
          return text;
        });
      }
      yield FEATURE_COLLECTION_CLOSE;
    });
  };
}

/** `GET /api/v1/public/reports.csv?pageSize=&page=` from PostgreSQL: one page, `Link` to the next. */
export function pgCsvRoute(ctx: PgReaderContext): RouteHandlerMethod {
  return async (request, reply) => {
    const query = publicQuery('csv', request, reply, ctx.config.readerCsvMaxPageSize);
    if (query === null) return reply;
    const snap = await openPgSnapshot(ctx.exportPool, ctx.queries, request, reply);
    if (snap === null) return reply;
    let count: number;
    let extraColumns: string[];
    try {
      const etag = snap.validators.etag;
      count = await ctx.cache.get(etag, 'count', () => ctx.queries.count(snap.client));
      extraColumns = await ctx.cache.get(etag, 'extraKeys', () => ctx.queries.extraKeys(snap.client));
    } catch (err) {
      await snap.tx.finish(false);
      throw err;
    }
    const { pageSize, page } = query;
    const headers: Record<string, string> = { 'Content-Type': 'text/csv; charset=utf-8' };
    if (page * pageSize < count) {
      const next = `${PUBLIC_PATHS.csv}?pageSize=${pageSize}&page=${page + 1}`;
      headers.Link = `<${publicLink(ctx.config, request, next)}>; rel="next"`;
    }
    const range = { offset: (page - 1) * pageSize, limit: pageSize };
    const stream = ctx.queries.stream(snap.client, {}, { order: 'oldest', range });
    const rows = new CsvRows(extraColumns);
    const key = JSON.stringify(['csv', pageSize, page]);
    return send(ctx, request, reply, snap, headers, key, async function* () {
      yield toCsvRecords([[...CSV_COLUMNS, ...extraColumns]]);
      for await (const reports of stream) yield lines(reports, (r) => rows.row(r));
    });
  };
}

function send(
  ctx: PgReaderContext,
  request: FastifyRequest,
  reply: FastifyReply,
  snap: PgSnapshot,
  headers: string | Record<string, string>,
  key: string,
  pieces: () => AsyncIterable<string>,
): Promise<FastifyReply> {
  const all = typeof headers === 'string' ? { 'Content-Type': headers } : headers;
  return sendExport(ctx, request, reply, snap, all, key, pieces);
}

/** One text of a batch of reports, each written by `line`. */
function lines(reports: readonly Report[], line: (report: Report) => string): string {
  let text = '';
  for (const report of reports) text += line(report);
  return text;
}
