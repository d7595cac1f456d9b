import type { RouteHandlerMethod } from 'fastify';
import { PUBLIC_PATHS } from '../../schema/public-query.js';
import { canonicalJson } from '../../schema/wire-format.js';
import { publicQuery } from '../public-query.js';
import type { ReaderContext } from '../reader-context.js';
import { listPageRows } from '../report-pages.js';
import { rowToReport } from '../report-rows.js';
import { replyNotModified, validatorHeaders, validatorsOf, type Validators } from '../validators.js';

/**
 * `GET /api/v1/public/reports?destination=&status=&pageSize=&page=` from the warehouse: a JSON array of wire
 * reports (`toWire`, upstream field names, extras included), newest first (`createdAt` desc, then `id`;
 * docs/sources.md), `destination` and `status` AND-ed (docs/upstream-contract.md rule 1), no filter = the latest reports (rule 3),
 * removed reports left out. Pages are 1-based, default `pageSize` 50; a page past the end is `[]`.
 * `ETag`/`Last-Modified` of the data state; a matching `If-None-Match` or `If-Modified-Since` answers 304.
 *
 * The busiest endpoint takes the cheap path: validators from {@link ReaderContext.validators} (re-read at
 * most every REPORTS_READER_VALIDATORS_TTL_MS), pages from {@link ReaderContext.pages} (kept per data
 * state), and a warehouse query only for a page not cached yet: a seek on the few time buckets that hold
 * the page, at any depth (report-pages.ts). A page's rows carry the serving version they were read at, and
 * the validators the version they were read with: a page of another state than the validators (a run
 * committed within the TTL) is not cached under them, and is labelled with validators read again, or with
 * none when a second commit raced that read. So one tag never names two states, and a client walking pages
 * under one tag sees one state.
 */
export function listRoute(ctx: ReaderContext): RouteHandlerMethod {
  const what = `The list query of GET ${PUBLIC_PATHS.list}`;
  return async (request, reply) => {
    const query = publicQuery('list', request, reply, ctx.config.readerListMaxPageSize);
    if (query === null) return reply;
    const state = await ctx.validators.runs();
    let validators: Validators | undefined = validatorsOf(state.changed);
    if (replyNotModified(request, reply, validators)) return reply;
    const filter = { destination: query.destination, status: query.status };
    const pageQuery = { index: ctx.pageIndex, filter, timeoutMs: ctx.config.readerQueryTimeoutMs, what };
    const key = JSON.stringify([query.destination, query.status, query.pageSize, query.page]);
    const body = await ctx.pages
      .get(validators.etag, key, () =>
        ctx.pool.use(async (c) => {
          const { rows, version } = await listPageRows(c, pageQuery, query.page, query.pageSize);
          const text = `[${rows.map((row) => canonicalJson(rowToReport(row))).join(',')}]`;
          // Not kept under these validators (a failed computation is not cached): labelled below.
          if (version !== state.servingVersion) throw new OtherState(text, version);
          return text;
        }),
      )
      .catch(async (err: unknown) => {
        if (!(err instanceof OtherState)) throw err;
        const fresh = await ctx.validators.fresh();
        validators = fresh.servingVersion === err.version ? validatorsOf(fresh.changed) : undefined;
        return err.body;
      });
    reply.code(200).header('Content-Type', 'application/json; charset=utf-8');
    if (validators) reply.headers(validatorHeaders(validators));
    else reply.header('Cache-Control', 'no-store');
    return reply.send(body);
  };
}

/** A page read at another serving version than the validators in hand. */
class OtherState extends Error {
  constructor(
    readonly body: string,
    readonly version: bigint | null,
  ) {
    super('the page was read in another data state than its validators');
  }
}
