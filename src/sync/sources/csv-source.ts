import { startDecoders } from '../../normalize/decoders.js';
import { KnownLines } from '../../normalize/known-lines.js';
import { decidePaging, isPastEndAnswer, mayBeEnd } from './csv-paging.js';
import { csvPageUrl, PagesAhead, pastEndPage } from './csv-pages.js';
import { probeFirstPage, resumedPageSize } from './csv-resume.js';
import { compareValidators, describeValidator, hasValidator } from './export-validators.js';
import { extraLimits } from '../../config/config.js';
import { isNotModified } from '../conditional.js';
import { safeUrl } from '../../util/safe-url.js';
import { SyncError } from '../../util/errors.js';
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
 * adopted); a run that cannot tell stops incomplete. A page whose keys repeat the previous page's (the
 * server ignored `page`) stops the run incomplete too, as does a `Link` back to a page already read. A 400,
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
  const pageSize = config.csvPageSize;
  const resume = ctx.resumeFrom;
  let page = resume ? resume.page + 1 : 1;
  let url = resume?.nextUrl ? new URL(resume.nextUrl) : csvPageUrl(config, page);
  let validator: ExportValidator | undefined;
  if (resume) {
    validator = { etag: resume.etag, lastModified: resume.lastModified };
    yield { kind: 'export', info: { url: safeUrl(csvPageUrl(config, 1)), ...validator } };
    logger.info({ page, after: resume.page }, 'resuming the CSV export');
  }
  let previousKeys: string | undefined;
  let linkSeen = false;
  let perPage = false; // pages carry validators of their own (see below)
  let pastEndAt: number | undefined; // a page whose error answer was read as empty (pastEndPage)
  let missing: string | undefined; // why a page is missing: rows followed such an answer
  // The page being read was asked for by a `Link` (it must exist), as a resumed run's next URL may be.
  let viaLink = url.toString() !== csvPageUrl(config, page).toString();
  const visited = new Set<string>(); // page URLs read: a `Link` back to one is a loop
  // Paging state (csv-paging.ts): the page size in force, rows read, short pages read past, /stats total.
  let size = resume ? resumedPageSize(pageSize, resume) : pageSize;
  let rowsSoFar = resume?.rowsRead ?? 0;
  let gap = 0;
  let statsTotal: number | undefined;
  let statsAsked = false;
  // Why the pages read cannot be proven to be of one export version (then no tombstones).
  let consistency: string | undefined;
  const decoders = startDecoders(
    config.decodeWorkers,
    ctx.knownLines ?? (await KnownLines.empty('csv')),
    config.rejectRawMaxBytes,
    extraLimits(config),
  );
  // Fetches started ahead by a `Link: rel="next"` are aborted when the export ends early.
  const stop = new AbortController();
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, stop.signal]) : stop.signal;
  const ahead = new PagesAhead({ ...ctx, signal }, decoders);
  try {
    for (;;) {
      let fetched;
      try {
        fetched = await ahead.take(url, page);
      } catch (err) {
        if (page > 1 && !viaLink && isPastEndAnswer(err)) fetched = pastEndPage(url);
        // Page 1 answered 304 to the conditional request: the whole export is the one last read.
        else if (page !== 1 || !ctx.conditional || !isNotModified(err)) throw err;
        else {
          yield { kind: 'not-modified', url: safeUrl(url) };
          return { complete: true };
        }
      }
      visited.add(url.toString());
      yield { kind: 'bytes', read: fetched.bytes, wire: fetched.wireBytes };
      const seen: ExportValidator = { etag: fetched.etag, lastModified: fetched.lastModified };
      if (fetched.pastEnd) {
        // No validator to compare: an error answer stands for an empty page.
      } else if (validator === undefined) {
        validator = seen;
        yield { kind: 'export', info: { url: fetched.url, ...seen } };
      } else if (compareValidators(validator, seen) === 'unknown') {
        consistency ??=
          `page ${page} carries no validator of the kind page 1 had (${describeValidator(validator)}, now ` +
          `${describeValidator(seen)}): the pages cannot be proven to be of one version`;
      } else if (compareValidators(validator, seen) === 'changed') {
        // Changed, or a server that validates each page apart: then page 1 still has the validator it had.
        if (perPage || compareValidators(validator, await probeFirstPage(ctx)) === 'same') {
          // Page 1's validator names no export version: none is recorded, so no later run sends it (a 304
          // to page 1 would hide rows added on later pages).
          if (!perPage) yield { kind: 'export', info: { url: safeUrl(csvPageUrl(config, 1)) } };
          perPage = true;
          consistency ??=
            `page ${page} has a validator of its own (${describeValidator(seen)}) while page 1's is unchanged: ` +
            'the server validates each page, not the export, so the pages cannot be proven to be of one version';
        } else
          throw new SyncError(
            'EXPORT_CHANGED',
            `The CSV export changed while it was read: page ${page} (${fetched.url}) has validator ` +
              `${describeValidator(seen)}, page 1 had ${describeValidator(validator)}: the export is read again from page 1 ` +
              '(if it keeps changing, sync when the upstream is not regenerating it)',
            { context: { url: fetched.url, page, first: validator, now: seen }, retry: 'export' },
          );
      }
      const csv = fetched.decoded.page;
      const { rows } = csv;
      if (fetched.pastEnd) pastEndAt ??= page;
      else if (rows > 0 && pastEndAt !== undefined) {
        missing ??= `page ${pastEndAt} answered an error, yet page ${page} has rows: a page of the export is missing`;
      }
      logger.debug(
        { page, rows, parsed: csv.parsed, rejected: csv.rejected, lines: csv.lines, bytes: csv.bytes },
        'CSV page read',
      );
      if (consistency === undefined && !fetched.pastEnd && !hasValidator(seen)) {
        consistency =
          `page ${page} carries neither ETag nor Last-Modified: a paged export without a validator cannot ` +
          'prove its pages are of one version (a row unpublished mid-read shifts later rows across pages)';
      }
      if (page > config.csvMaxPages) {
        if (rows === 0) {
          return incomplete(
            ctx,
            `page ${page} is past REPORTS_CSV_MAX_PAGES=${config.csvMaxPages} and empty`,
          );
        }
        throw new SyncError(
          'CSV_MAX_PAGES',
          `The CSV export at ${fetched.url} still has rows on page ${page}, past REPORTS_CSV_MAX_PAGES=${config.csvMaxPages}: ` +
            'raise the limit or REPORTS_CSV_PAGE_SIZE if the export is really that large; otherwise the server pages in a loop',
          { context: { url: fetched.url, maxPages: config.csvMaxPages, pageSize } },
        );
      }
      if (rows > 0 && csv.keysDigest === previousKeys) {
        const reason =
          `page ${page} repeats the keys of page ${page - 1}: the server ignores the ` +
          `\`${config.csvPageParam}\` parameter (REPORTS_CSV_PAGE_PARAM?); stopped, the export is incomplete`;
        logger.warn({ page, url: fetched.url }, reason);
        return { complete: false, reason };
      }
      const link = fetched.next;
      rowsSoFar += rows;
      const facts = {
        page,
        rows,
        asked: pageSize,
        size,
        linkNext: link !== undefined,
        linkSeen,
        rowsSoFar,
        gap,
      };
      if (mayBeEnd(facts) && statsTotal === undefined && !statsAsked && ctx.upstreamTotal) {
        statsAsked = true;
        statsTotal = await ctx.upstreamTotal();
      }
      const decision = decidePaging({ ...facts, statsTotal });
      if (
        fetched.pastEnd &&
        decision.action === 'stop-complete' &&
        !(rowsSoFar >= (statsTotal ?? Infinity))
      ) {
        return incomplete(
          ctx,
          `page ${page} answered an error, not an empty page, and /stats does not confirm the end`,
        );
      }
      linkSeen ||= link !== undefined;
      if (decision.action === 'stop-incomplete') {
        const outcome = incomplete(ctx, decision.reason);
        if (rows > 0) {
          yield { kind: 'block', block: fetched.decoded.block };
          yield { kind: 'checkpoint', page };
        }
        return outcome;
      }
      const next =
        decision.action === 'continue'
          ? decision.via === 'link' && link !== undefined
            ? link
            : csvPageUrl(config, page + 1)
          : undefined;
      if (decision.action === 'continue') {
        if (decision.reason)
          logger.warn({ page, rows, pageSize: size, rowsSoFar, statsTotal }, decision.reason);
        size = decision.size;
        gap = decision.gap;
      }
      const loops = next !== undefined && visited.has(next.toString());
      viaLink = decision.action === 'continue' && decision.via === 'link';
      if (next !== undefined && !loops) ahead.start(next, page + 1);
      if (rows > 0) yield { kind: 'block', block: fetched.decoded.block };
      if (loops) {
        if (rows > 0) yield { kind: 'checkpoint', page };
        return incomplete(
          ctx,
          `the Link of page ${page} leads back to ${safeUrl(next)}, read before: the links loop`,
        );
      }
      if (rows > 0 || next !== undefined) yield { kind: 'checkpoint', page, nextUrl: next?.toString() };
      if (next === undefined) {
        logger.info({ page, rows, pageSize: size, rowsSoFar, statsTotal }, decision.reason);
        if (missing !== undefined) return incomplete(ctx, missing);
        return { complete: true, tombstonesBlocked: consistency };
      }
      previousKeys = rows > 0 ? csv.keysDigest : previousKeys;
      url = next;
      page++;
    }
  } finally {
    stop.abort(new Error('CSV export read ended'));
    ahead.dropAll();
    await decoders.close();
  }
}

/** An incomplete read, with a warning that carries the numbers (no tombstones follow). */
function incomplete(ctx: ReadContext, reason: string): ReadOutcome {
  ctx.logger.warn({ reason }, 'the CSV export stopped incomplete: no tombstones');
  return { complete: false, reason };
}
