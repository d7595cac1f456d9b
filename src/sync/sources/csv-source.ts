import { startSourceDecoders } from './source-decoders.js';
import { CsvPager, type PageAnswer } from './csv-pager.js';
import { csvPageUrl, PagesAhead, pastEndPage, type FetchedPage } from './csv-pages.js';
import { probeFirstPage } from './csv-resume.js';
import { isNotModified } from '../conditional.js';
import { safeUrl } from '../../util/safe-url.js';
import { notAtPath, refusedPageSize } from '../../upstream/http-answers.js';
import type {
  SourceItem,
  ReadOutcome,
  ExportSource,
  ExportValidator,
  ReadContext,
} from '../export-source.js';

/**
 * The paged CSV export (`REPORTS_CSV_PATH?pageSize=N&page=P`; docs/upstream-contract.md rule 2, docs/how-a-sync-works.md).
 *
 * Each page is fetched with its own retries (a broken body refetches that page from its start, never a
 * `Range` splice), following up to `REPORTS_MAX_REDIRECTS` redirects with the key dropped cross-origin
 * (openStream), parsed whole and decoded in a decode worker (`decodeCsvPage` of normalize/csv-page-decode.ts;
 * up to `PAGES_AHEAD` (csv-pages.ts) pages ahead of the one being staged), then yielded as one block with a
 * {@link CheckpointMark}: batches are committed at page ends, so a checkpoint always names a whole page.
 *
 * Paging (csv-paging.ts decides): the next page is the `Link: <…>; rel="next"` target when the server sends
 * one, else page P+1 by the `REPORTS_CSV_PAGE_PARAM` parameter. A short or empty page is the end only when
 * nothing says otherwise (a `Link`, a `/stats` total not reached, a capped first page whose served size is
 * adopted); a run that cannot tell stops incomplete. A page whose keys repeat the previous page's ends the
 * export there once paging worked (a server answering a page past its end with its last page); page 2
 * repeating page 1 (the server ignored `page`) stops the run incomplete, as does a `Link` back to a page
 * already read. A 400,
 * 404, 410 or 416 to a page asked for by number reads as an empty page (some servers answer so past the end):
 * complete only when `/stats` confirms it and no rows follow. Over `REPORTS_CSV_MAX_PAGES` pages: an error.
 *
 * Every page must carry the validator (`ETag`, else `Last-Modified`) page 1 had: else the export changed
 * while read (pages may overlap or miss rows) and restarts from page 1 (`EXPORT_CHANGED`, retryable), unless
 * page 1 still has its own (per-page validators). Pages without a common validator cannot prove they are
 * one version: the run completes but infers no tombstones (`tombstonesBlocked`; docs/guarantees.md).
 */
export const csvSource: ExportSource = {
  name: 'csv',
  fullExport: true,
  paging: {
    pageSize: (config) => config.csvPageSize,
    probe: probeFirstPage,
  },
  read: readCsvExport,
};

async function* readCsvExport(ctx: ReadContext): AsyncGenerator<SourceItem, ReadOutcome> {
  const { config, logger } = ctx;
  const pager = new CsvPager({
    pageSize: config.csvPageSize,
    maxPages: config.csvMaxPages,
    pageParam: config.csvPageParam,
    pageUrl: (page) => csvPageUrl(config, page),
    statsTotalAvailable: ctx.upstreamTotal !== undefined,
    validatorUnstable: ctx.validatorUnstable === true,
    resume: ctx.resumeFrom,
  });
  const resumed = pager.resumedValidator;
  if (resumed) {
    yield { kind: 'export', info: { url: safeUrl(csvPageUrl(config, 1)), ...resumed } };
    logger.info({ page: pager.page, after: pager.page - 1 }, 'resuming the CSV export');
  }
  const decoders = await startSourceDecoders(ctx, 'csv');
  // Fetches started ahead by a `Link: rel="next"` are aborted when the export ends early.
  const stop = new AbortController();
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, stop.signal]) : stop.signal;
  const ahead = new PagesAhead({ ...ctx, signal }, decoders);
  try {
    for (;;) {
      const page = pager.page;
      const fetched = await takePage(ctx, pager, ahead);
      if (fetched === 'not-modified') {
        yield { kind: 'not-modified', url: safeUrl(pager.url) };
        return { complete: true };
      }
      yield { kind: 'bytes', read: fetched.bytes, wire: fetched.wireBytes };
      const answer = pageAnswer(fetched);
      const info = await validatorStep(ctx, pager, answer);
      if (info) yield { kind: 'export', info };
      pager.countRows(answer);
      const { rows, parsed, rejected, lines, bytes } = fetched.decoded.page;
      logger.debug({ page, rows, parsed, rejected, lines, bytes }, 'CSV page read');
      let step = pager.decide(answer);
      if (step === 'stats-total') {
        pager.statsTotal = await ctx.upstreamTotal?.();
        step = pager.decide(answer);
      }
      if (step === 'stats-total') throw new Error('the CSV pager asked for the /stats total twice');
      for (const { level, fields, message } of step.logs) logger[level](fields, message);
      if (step.start) ahead.start(step.start, page + 1);
      if (step.block) yield { kind: 'block', block: fetched.decoded.block };
      if (step.checkpoint) yield { kind: 'checkpoint', page, nextUrl: step.checkpoint.nextUrl };
      if (step.outcome) return step.outcome;
    }
  } finally {
    stop.abort(new Error('CSV export read ended'));
    ahead.dropAll();
    await decoders.close();
  }
}

/** Fetches the pager's page; an error answer past the end reads as an empty page, a 304 to page 1 as such. */
async function takePage(
  ctx: ReadContext,
  pager: CsvPager,
  ahead: PagesAhead,
): Promise<FetchedPage | 'not-modified'> {
  try {
    return await ahead.take(pager.url, pager.page);
  } catch (err) {
    const read = pager.onFetchError(err, ctx.conditional !== undefined, isNotModified(err));
    if (read === 'past-end') return pastEndPage(pager.url);
    if (read === 'not-modified') return read;
    const refused = refusedPageSize(err, 'REPORTS_CSV_PAGE_SIZE', ctx.config.csvPageSize);
    throw pager.page === 1 ? notAtPath(refused, 'REPORTS_CSV_PATH') : refused;
  }
}

/** The validator check of a page, asking page 1 again when the pager needs to; the export info to record. */
async function validatorStep(
  ctx: ReadContext,
  pager: CsvPager,
  answer: PageAnswer,
): Promise<(ExportValidator & { url: string }) | undefined> {
  let step = pager.checkValidator(answer);
  if (step.kind === 'probe') step = pager.afterProbe(answer, await probeFirstPage(ctx));
  return step.kind === 'export' ? step.info : undefined;
}

/** What the pager reads of a fetched page. */
function pageAnswer(fetched: FetchedPage): PageAnswer {
  const { url, next, etag, lastModified, pastEnd } = fetched;
  return {
    url,
    next,
    etag,
    lastModified,
    pastEnd,
    rows: fetched.decoded.page.rows,
    keysDigest: fetched.decoded.page.keysDigest,
  };
}
