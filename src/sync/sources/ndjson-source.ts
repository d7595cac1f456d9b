import { cacheAgeOf, pageValidator } from './export-validators.js';
import { startSourceDecoders } from './source-decoders.js';
import { requestOptions } from '../../upstream/request-options.js';
import { bodyEndChecked, header, networkError } from '../../upstream/http-answers.js';
import { openStream, type OpenResponse } from '../../upstream/open-stream.js';
import { decodeNdjson } from '../../normalize/ndjson-decode.js';
import { charsetOf, utf8Chunks } from '../../upstream/charset.js';
import { countBytes } from '../count-bytes.js';
import type { ExportSource, ReadContext } from '../export-source.js';
import { safeUrl } from '../../util/safe-url.js';
import { isNotModified } from '../conditional.js';
import type { BlockDecoders } from '../../normalize/decoders.js';
import type { SourceItem } from '../export-source.js';
import { NdjsonPages } from './ndjson-pages.js';
import { isPastEndAnswer } from './csv-paging.js';
import { withRetry } from '../../upstream/with-retry.js';
import { errorMessage, SyncError } from '../../util/errors.js';
import { openFoundExport, takenBy, type ExportCandidate } from './ndjson-discovery.js';
import { ndjsonLines } from './ndjson-document.js';

/**
 * The NDJSON export (`REPORTS_NDJSON_PATH`, default `/api/v1/public/reports.ndjson`; the upstream does not show
 * the path, docs/upstream-contract.md; unset, other places are asked when that one answers 404:
 * ndjson-discovery.ts): one streamed GET, one report per line. A conditional GET answered 304 yields
 * only `not-modified`. An export that answers in pages linked by `Link: rel="next"` is read page after page
 * (ndjson-pages.ts); it completes with its tombstones blocked when its pages cannot be proven one version,
 * and ends at a page repeating the one before (complete past page 2, as the CSV export: csv-paging.ts).
 */
export const ndjsonSource: ExportSource = {
  name: 'ndjson',
  fullExport: true,
  async *read(ctx: ReadContext) {
    const found = await openFoundExport(ctx.config, ctx.logger, (candidate) =>
      openExport(ctx, candidate.url.toString(), candidate.accept, candidate.conditional),
    );
    const { res: first, candidate } = found;
    const url = candidate.url.toString();
    if (first === 'not-modified') {
      yield { kind: 'not-modified', url: safeUrl(url) };
      return { complete: true };
    }
    let res: OpenResponse = first;
    const pages = NdjsonPages.isPaged(res) ? new NdjsonPages(res, ctx.config.csvMaxPages) : undefined;
    yield {
      kind: 'export',
      info: { url: res.url, ...pageValidator(res.headers), cacheAge: cacheAgeOf(res.headers) },
    };
    const decoders = await startSourceDecoders(ctx, 'ndjson');
    try {
      for (;;) {
        yield* readBody(ctx, res, decoders, pages);
        const next = pages?.next(res);
        if (next === undefined || 'end' in next) break;
        if ('loop' in next) return { complete: false, reason: next.loop };
        if ('repeated' in next) {
          if (!next.repeated.complete) return { complete: false, reason: next.repeated.reason };
          ctx.logger.info({ page: pages!.page, url: res.url }, next.repeated.reason);
          break;
        }
        const opened = 'pastEnd' in next ? next : await openPage(ctx, next.url, pages!.page, candidate);
        if ('pastEnd' in opened) {
          const end = await confirmedEnd(ctx, pages!, opened.pastEnd);
          if (end === undefined) break;
          return end;
        }
        res = opened;
        pages!.checkPage(res);
      }
    } finally {
      await decoders.close();
    }
    if (pages?.consistency === undefined) return { complete: true };
    // No validator is recorded: a 304 to page 1 would say nothing of the pages after it.
    yield { kind: 'export', info: { url: safeUrl(url) } };
    return { complete: true, tombstonesBlocked: pages.consistency };
  },
};

/** Decodes one body of the export (the whole export, or one of its pages) into blocks, with its byte counts. */
async function* readBody(
  ctx: ReadContext,
  res: OpenResponse,
  decoders: BlockDecoders,
  pages: NdjsonPages | undefined,
): AsyncGenerator<SourceItem> {
  let read = 0; // body bytes since the last `bytes` item
  let wire = 0;
  const utf8 = utf8Body(res, (n) => (read += n));
  // A JSON document answered instead of lines (an array, an object wrapping one) is read as its reports.
  const lines = ndjsonLines(utf8, header(res.headers, 'content-type'), res.url, ctx.config.maxRecordBytes);
  const body = pages ? pages.countLines(lines) : lines;
  try {
    for await (const block of decodeNdjson(body, {
      maxRecordBytes: ctx.config.maxRecordBytes,
      rejectRawMaxBytes: ctx.config.rejectRawMaxBytes,
      url: res.url,
      endChecked: bodyEndChecked(res.headers),
      lineOffset: pages?.lineOffset,
      decoders,
      rawBlocks: pages && ((raw) => pages.rawBlocks(raw)),
    })) {
      yield { kind: 'bytes', read };
      read = 0;
      yield { kind: 'block', block: pages ? pages.locate(block) : block };
    }
  } catch (err) {
    throw networkError(err, res.url);
  } finally {
    wire = res.wireBytes();
    res.body.destroy();
  }
  yield { kind: 'bytes', read, wire };
}

/**
 * GETs a page after the first of a paged export (never conditional: the run's validators are page 1's),
 * retried on its own (a 429 on page 5 waits its `Retry-After` and asks page 5 again, not the whole export).
 * An error answer past the last page (400, 404, 410, 416: a server linking on from its last page) reads
 * as `pastEnd`.
 */
async function openPage(
  ctx: ReadContext,
  url: URL,
  page: number,
  candidate: ExportCandidate,
): Promise<OpenResponse | { pastEnd: string }> {
  let res: OpenResponse;
  try {
    res = await withRetry(
      `NDJSON page ${page}`,
      ctx.config,
      ctx.logger,
      () =>
        openStream(
          url,
          requestOptions(ctx.config, ctx, url.toString(), { accept: candidate.accept, deadline: 'export' }),
        ),
      ctx.signal,
    );
  } catch (err) {
    if (!isPastEndAnswer(err)) throw err;
    return {
      pastEnd: `page ${page} of the NDJSON export, linked from the page before, answered ${errorMessage(err)}`,
    };
  }
  if (takenBy(candidate, res)) return res;
  res.body.on('error', () => undefined);
  res.body.destroy();
  throw new SyncError(
    'UNEXPECTED_CONTENT_TYPE',
    `page ${page} of the NDJSON export (${res.url}) answered ${header(res.headers, 'content-type') ?? 'no Content-Type'}, not the NDJSON its first page was`,
    { context: { url: res.url, page } },
  );
}

/**
 * Where the links end without a last page (an error answer, or empty pages still linking on): the end,
 * `undefined`, when the `/stats` total confirms every record was read; else the read stops incomplete.
 */
async function confirmedEnd(
  ctx: ReadContext,
  pages: NdjsonPages,
  why: string,
): Promise<{ complete: false; reason: string } | undefined> {
  const total = await ctx.upstreamTotal?.();
  if (total !== undefined && pages.recordsSoFar >= total) return undefined;
  return { complete: false, reason: `${why}, and /stats (${total ?? 'unknown'}) does not confirm the end` };
}

/** GETs the export (conditionally when the run has validators); `not-modified` for a 304 to that. */
async function openExport(
  ctx: ReadContext,
  url: string,
  accept: string,
  conditional: boolean,
): Promise<OpenResponse | 'not-modified'> {
  const validators = conditional ? ctx.conditional : undefined;
  try {
    return await openStream(
      url,
      requestOptions(ctx.config, ctx, url, {
        accept,
        headers: validators,
        deadline: 'export',
      }),
    );
  } catch (err) {
    // A 304 to the conditional request: the export is the one the last complete run read.
    if (!validators || !isNotModified(err)) throw err;
    return 'not-modified';
  }
}

/**
 * The body as UTF-8 chunks, counted as they come (`onBytes`). JSON is UTF-8 (RFC 8259 §8.1), but a declared
 * charset is honoured (or the export refused before reading), never read as UTF-8 with U+FFFD.
 */
function utf8Body(res: OpenResponse, onBytes: (n: number) => void): AsyncIterable<Uint8Array> {
  try {
    return utf8Chunks(countBytes(res.body, onBytes), charsetOf(header(res.headers, 'content-type')), res.url);
  } catch (err) {
    res.body.on('error', () => undefined); // the abort of an unread body is no failure of its own
    res.body.destroy();
    throw err;
  }
}
