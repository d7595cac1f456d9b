import { requireBaseUrl, type Config } from '../../config/config.js';
import type { DecodedCsvPage } from '../../extract/csv-page-decode.js';
import { startDecoders, type BlockDecoders } from '../../extract/decoders.js';
import { charsetOf, toUtf8 } from '../../extract/charset.js';
import type { Extracted } from '../../extract/record.js';
import { KnownLines } from '../known-lines.js';
import { decidePaging, mayBeEnd } from './csv-paging.js';
import { validateCsvReport, type CsvRow } from '../../schema/report.js';
import { extraLimits } from '../../config/config.js';
import { nextLink } from '../../upstream/link-header.js';
import { header, networkError, openStream } from '../../upstream/open-stream.js';
import { isNotModified } from '../conditional.js';
import { safeUrl } from '../../upstream/safe-url.js';
import { withRetry } from '../../upstream/with-retry.js';
import { isSyncError, SyncError } from '../../util/errors.js';
import type { CheckpointMark, ExportSource, ExportValidator, ReadContext } from '../export-source.js';

const ACCEPT = 'text/csv, application/csv;q=0.9, */*;q=0.1';

/**
 * The paged CSV export (`REPORTS_CSV_PATH?pageSize=N&page=P`; seed rule 2, DESIGN.md §2/§4).
 *
 * Each page is fetched with its own retries (a broken body refetches that page from its start, never a
 * `Range` splice), following up to `REPORTS_MAX_REDIRECTS` redirects with the key dropped cross-origin
 * (openStream), parsed whole and decoded in a decode worker (`decodeCsvPage` of extract/csv-page-decode.ts;
 * up to {@link PAGES_AHEAD} pages ahead of the one being staged), then yielded as one block with a
 * {@link CheckpointMark}, so each page is committed as one checkpoint together with its staged rows and rejects.
 *
 * Paging (csv-paging.ts decides): the next page is the `Link: <…>; rel="next"` target when the server sends
 * one, else page P+1 by the `REPORTS_CSV_PAGE_PARAM` parameter. A short or empty page is the end only when
 * nothing says otherwise (a `Link`, a `/stats` total not reached, a capped first page whose served size is
 * adopted); a run that cannot tell stops incomplete. A page whose keys repeat the previous page's (the
 * server ignored `page`) stops the run incomplete too. More than `REPORTS_CSV_MAX_PAGES` pages is an error.
 *
 * Every page must carry the validator (`ETag`, else `Last-Modified`) page 1 had: a different one means the
 * export changed while being read, so pages may overlap or miss rows; the export restarts from page 1
 * (`EXPORT_CHANGED`, retryable). Pages without a validator (or without one in common with page 1) cannot
 * prove they are one version of the export: the run completes but infers no tombstones
 * (`ReadContext.blockTombstones`; docs/guarantees.md, "Deletes and completeness").
 */
export const csvSource: ExportSource = {
  name: 'csv',
  fullExport: true,
  validate: (value, _raw, limits) => validateCsvReport(value as CsvRow, limits),
  paging: {
    pageSize: (config) => config.csvPageSize,
    probe: probeFirstPage,
  },
  read: readCsvExport,
};

/** URL of page `page` of the export: `pageSize` and the configured page parameter set. */
export function csvPageUrl(config: Config, page: number): URL {
  const url = new URL(`${requireBaseUrl(config)}${config.csvPath}`);
  url.searchParams.set('pageSize', String(config.csvPageSize));
  url.searchParams.set(config.csvPageParam, String(page));
  return url;
}

/** Pages fetched ahead of the one being staged (downloaded and decoding in the workers meanwhile). */
const PAGES_AHEAD = 3;

async function* readCsvExport(ctx: ReadContext): AsyncGenerator<Extracted | CheckpointMark> {
  const { config, logger } = ctx;
  const pageSize = config.csvPageSize;
  const resume = ctx.resumeFrom;
  let page = resume ? resume.page + 1 : 1;
  let url = resume?.nextUrl ? new URL(resume.nextUrl) : csvPageUrl(config, page);
  let validator: ExportValidator | undefined;
  if (resume) {
    validator = { etag: resume.etag, lastModified: resume.lastModified };
    ctx.setExportInfo({ url: safeUrl(csvPageUrl(config, 1)), ...validator });
    logger.info({ page, after: resume.page }, 'resuming the CSV export');
  }
  let previousKeys: string | undefined;
  let linkSeen = false;
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
        // Page 1 answered 304 to the conditional request: the whole export is the one last read.
        if (page !== 1 || !ctx.conditional || !isNotModified(err)) throw err;
        ctx.markNotModified(safeUrl(url));
        return;
      }
      ctx.addBytes(fetched.bytes);
      ctx.addWireBytes(fetched.wireBytes);
      const seen: ExportValidator = { etag: fetched.etag, lastModified: fetched.lastModified };
      if (validator === undefined) {
        validator = seen;
        ctx.setExportInfo({ url: fetched.url, ...seen });
      } else if (compareValidators(validator, seen) === 'unknown') {
        consistency ??=
          `page ${page} carries no validator of the kind page 1 had (${describe(validator)}, now ` +
          `${describe(seen)}): the pages cannot be proven to be of one version`;
      } else if (compareValidators(validator, seen) === 'changed') {
        throw new SyncError(
          'EXPORT_CHANGED',
          `The CSV export changed while it was read: page ${page} (${fetched.url}) has validator ` +
            `${describe(seen)}, page 1 had ${describe(validator)}: the export is read again from page 1 ` +
            '(if it keeps changing, sync when the upstream is not regenerating it)',
          { context: { url: fetched.url, page, first: validator, now: seen }, retryable: true },
        );
      }
      const csv = fetched.decoded.page;
      const { rows } = csv;
      logger.debug(
        { page, rows, parsed: csv.parsed, rejected: csv.rejected, lines: csv.lines, bytes: csv.bytes },
        'CSV page read',
      );
      if (consistency === undefined && !hasValidator(seen)) {
        consistency =
          `page ${page} carries neither ETag nor Last-Modified: a paged export without a validator cannot ` +
          'prove its pages are of one version (a row unpublished mid-read shifts later rows across pages)';
      }
      if (page > config.csvMaxPages) {
        if (rows === 0) {
          markIncomplete(ctx, `page ${page} is past REPORTS_CSV_MAX_PAGES=${config.csvMaxPages} and empty`);
          return;
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
        ctx.markIncomplete(reason);
        return;
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
      linkSeen ||= link !== undefined;
      if (decision.action === 'stop-incomplete') {
        markIncomplete(ctx, decision.reason);
        if (rows > 0) {
          yield { kind: 'block', block: fetched.decoded.block };
          yield { kind: 'checkpoint', page };
        }
        return;
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
      if (next !== undefined) ahead.start(next, page + 1);
      if (rows > 0) yield { kind: 'block', block: fetched.decoded.block };
      if (rows > 0 || next !== undefined) yield { kind: 'checkpoint', page, nextUrl: next?.toString() };
      if (next === undefined) {
        logger.info({ page, rows, pageSize: size, rowsSoFar, statsTotal }, decision.reason);
        if (consistency !== undefined) ctx.blockTombstones(consistency);
        return;
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

/** One page requested by {@link PagesAhead}. */
interface PageFetch {
  page: number;
  url: string;
  fetched: Promise<FetchedPage>;
  /** Aborts this page's request and its retries (when it is dropped). */
  abort: AbortController;
  /** The page's `Link: rel="next"`, once its body is in. */
  next?: URL | undefined;
}

/**
 * The pages fetched ahead, in page order (a page is downloaded and parsed in a decode worker while
 * earlier ones are staged, and up to {@link PAGES_AHEAD} pages are in flight so both workers are busy).
 * A page's `Link: rel="next"` starts the next fetch as soon as the page is downloaded; without a `Link`, the
 * next page is only known once this one is decoded (its row count), so the reader starts it itself. A page
 * fetched ahead that the reader does not ask for is aborted, never left running.
 */
class PagesAhead {
  /** Pages started and not yet taken, in page order. */
  readonly #queue: PageFetch[] = [];
  /** The page started last (taken or not): its `Link` leads the window on. */
  #tail: PageFetch | undefined;

  constructor(
    private readonly ctx: ReadContext,
    private readonly decoders: BlockDecoders,
  ) {}

  /**
   * Page `page` at `url`: the fetch started ahead when one is queued for it (pages queued before it are
   * aborted), else a new fetch. Rejects with the page's error (see {@link fetchPage}).
   */
  async take(url: URL, page: number): Promise<FetchedPage> {
    const at = this.#queue.findIndex((e) => e.page === page && e.url === url.toString());
    if (at === -1) {
      this.dropAll();
      this.start(url, page);
    } else {
      for (const dropped of this.#queue.splice(0, at)) dropped.abort.abort();
    }
    const entry = this.#queue.shift()!;
    this.#extend();
    return entry.fetched;
  }

  /** Starts fetching page `page` at `url` unless it is already queued. */
  start(url: URL, page: number): void {
    if (this.#queue.some((e) => e.page === page && e.url === url.toString())) return;
    const abort = new AbortController();
    const signal = this.ctx.signal ? AbortSignal.any([this.ctx.signal, abort.signal]) : abort.signal;
    const entry: Partial<PageFetch> & { page: number; url: string; abort: AbortController } = {
      page,
      url: url.toString(),
      abort,
    };
    entry.fetched = fetchPage({ ...this.ctx, signal }, url, page, this.decoders, (next) => {
      entry.next = next;
      if (this.#tail === entry) this.#extend();
    });
    entry.fetched.catch(() => undefined); // surfaces when taken; unawaited if the export ends first
    this.#queue.push(entry as PageFetch);
    this.#tail = entry as PageFetch;
  }

  /** Aborts and forgets the pages fetched ahead. */
  dropAll(): void {
    for (const dropped of this.#queue) dropped.abort.abort();
    this.#queue.length = 0;
    this.#tail = undefined;
  }

  /** Starts the page the last started one links to, once that one is downloaded, while the window has room. */
  #extend(): void {
    const tail = this.#tail;
    if (tail?.next === undefined || this.#queue.length >= PAGES_AHEAD) return;
    this.start(tail.next, tail.page + 1);
  }
}

interface FetchedPage {
  decoded: DecodedCsvPage;
  /** Body size in bytes, decoded. */
  bytes: number;
  /** Body size in bytes on the wire (compressed, when it was). */
  wireBytes: number;
  /** Safe URL that answered. */
  url: string;
  /** The `Link: rel="next"` target, resolved against the URL that answered. */
  next: URL | undefined;
  etag?: string | undefined;
  lastModified?: string | undefined;
}

/**
 * GETs one page and decodes it in a decode worker, retrying it alone (429/5xx, resets, a body cut short) as
 * with-retry.ts says; `onDownloaded` is called with the page's `Link: rel="next"` once its body is in (before
 * decoding). Once its retries are spent the error is no longer retryable: the runner must not restart the
 * whole export for a page that keeps failing.
 */
async function fetchPage(
  ctx: ReadContext,
  url: URL,
  page: number,
  decoders: BlockDecoders,
  onDownloaded: (next: URL | undefined) => void,
): Promise<FetchedPage> {
  const { config } = ctx;
  try {
    return await withRetry(
      `CSV page ${page}`,
      config,
      ctx.logger,
      async () => {
        const res = await openStream(url, {
          dispatcher: ctx.dispatcher,
          apiKey: keyFor(config, url),
          maxRedirects: config.maxRedirects,
          signal: ctx.signal,
          headers: { accept: ACCEPT, ...(page === 1 ? ctx.conditional : undefined) },
          deadline: pageDeadline(config),
        });
        let body: Buffer;
        let wireBytes = 0;
        try {
          body = await readBody(res.body);
        } catch (err) {
          throw networkError(err, res.url);
        } finally {
          wireBytes = res.wireBytes();
          res.body.destroy();
        }
        // A declared charset is honoured (or the page refused), never read as UTF-8 with U+FFFD.
        body = toUtf8(body, charsetOf(header(res.headers, 'content-type')), res.url);
        const next = nextLink(res.headers.link, res.finalUrl);
        onDownloaded(next);
        const framing = {
          delimited:
            res.headers['content-length'] !== undefined || res.headers['transfer-encoding'] !== undefined,
          unterminated: body.length > 0 && body[body.length - 1] !== 0x0a,
          linked: res.headers.link !== undefined,
        };
        const bytes = body.length;
        // The body's memory moves to the worker: `body` is unusable from here on.
        const decoded = await decoders.decodePage(body, {
          page,
          maxRecordBytes: config.maxRecordBytes,
          rejectRawMaxBytes: config.rejectRawMaxBytes,
          url: res.url,
          extraLimits: extraLimits(config),
        });
        checkCloseDelimited(framing, decoded.page.rows, { page, url: res.url, pageSize: config.csvPageSize });
        return {
          decoded,
          bytes,
          wireBytes,
          url: res.url,
          next,
          etag: header(res.headers, 'etag'),
          lastModified: header(res.headers, 'last-modified'),
        };
      },
      ctx.signal,
    );
  } catch (err) {
    if (isSyncError(err) && err.retryable) {
      throw new SyncError(err.code, `${err.message} (page ${page}: retries spent)`, {
        context: { ...err.context, page },
        cause: err,
        retryable: false,
      });
    }
    throw err;
  }
}

/**
 * A close-delimited body (neither `Content-Length` nor chunked framing: HTTP/1.1 ends it by closing the
 * connection) cannot tell a cut connection from its end, so undici cannot catch the cut. Such a page counts
 * as cut short when it does not end with a line break, or when it holds fewer rows than `pageSize` yet links
 * a next page: either way the rest of the page would be lost silently (`csv:cut`).
 *
 * @param framing whether the response was length-delimited or chunked, ended without a line break, and
 *   sent a `Link` header
 * @param rows data rows of the page
 * @throws SyncError `BODY_TRUNCATED` (retryable: the page is fetched again)
 */
function checkCloseDelimited(
  framing: { delimited: boolean; unterminated: boolean; linked: boolean },
  rows: number,
  where: { page: number; url: string; pageSize: number },
): void {
  if (framing.delimited) return;
  const shortWithNext = framing.linked && rows < where.pageSize && rows > 0;
  if (!framing.unterminated && !shortWithNext) return;
  throw new SyncError(
    'BODY_TRUNCATED',
    `CSV page ${where.page} from ${where.url} looks cut short: a close-delimited body ` +
      (framing.unterminated
        ? 'ending without a line break'
        : `of ${rows} rows (pageSize ${where.pageSize}) that links a next page`),
    { context: { url: where.url, page: where.page, rows }, retryable: true },
  );
}

/** `probe` of {@link PagedExport}: the validator of page 1, its body left unread. */
async function probeFirstPage(ctx: ReadContext): Promise<ExportValidator> {
  const url = csvPageUrl(ctx.config, 1);
  return withRetry(
    'CSV page 1 (resume check)',
    ctx.config,
    ctx.logger,
    async () => {
      const res = await openStream(url, {
        dispatcher: ctx.dispatcher,
        apiKey: keyFor(ctx.config, url),
        maxRedirects: ctx.config.maxRedirects,
        signal: ctx.signal,
        headers: { accept: ACCEPT },
        deadline: pageDeadline(ctx.config),
      });
      // Abort the body unread; undici then emits an abort error nobody else listens to.
      res.body.once('error', () => undefined);
      res.body.destroy();
      return { etag: header(res.headers, 'etag'), lastModified: header(res.headers, 'last-modified') };
    },
    ctx.signal,
  );
}

function pageDeadline(config: Config): { ms: number; setting: string } {
  return { ms: config.pageDeadlineMs, setting: 'REPORTS_PAGE_DEADLINE_MS' };
}

/**
 * The API key for a request to `url`: only when `url` is on the configured upstream's origin. A `Link` (or a
 * resume URL) may point at the origin a redirect led to; the key must not follow it there (DESIGN.md §2).
 */
function keyFor(config: Config, url: URL): string | undefined {
  return new URL(requireBaseUrl(config)).origin === url.origin ? config.apiKey : undefined;
}

/**
 * Whether two validators tell the same version of the export: ETags when both have one, else Last-Modified
 * when both have one; `unknown` without a common validator (nothing can be told).
 */
export function compareValidators(a: ExportValidator, b: ExportValidator): 'same' | 'changed' | 'unknown' {
  if (a.etag !== undefined && b.etag !== undefined) return a.etag === b.etag ? 'same' : 'changed';
  if (a.lastModified !== undefined && b.lastModified !== undefined) {
    return a.lastModified === b.lastModified ? 'same' : 'changed';
  }
  return 'unknown';
}

function hasValidator(v: ExportValidator): boolean {
  return v.etag !== undefined || v.lastModified !== undefined;
}

/** Marks the export incomplete with a warning that carries the numbers (no tombstones follow). */
function markIncomplete(ctx: ReadContext, reason: string): void {
  ctx.logger.warn({ reason }, 'the CSV export stopped incomplete: no tombstones');
  ctx.markIncomplete(reason);
}

/**
 * The page size in force when resuming: the rows per committed page when the server served fewer than
 * asked (its cap, adopted by the interrupted run), else the size asked.
 */
function resumedPageSize(asked: number, resume: { page: number; rowsRead?: number | undefined }): number {
  if (resume.rowsRead === undefined || resume.page < 1) return asked;
  const served = Math.round(resume.rowsRead / resume.page);
  return served > 0 && served < asked ? served : asked;
}

function describe(v: ExportValidator): string {
  if (v.etag !== undefined) return `ETag ${v.etag}`;
  if (v.lastModified !== undefined) return `Last-Modified ${v.lastModified}`;
  return '(none)';
}

/** The whole body in a buffer of its own (not Node's shared pool: it is transferred to a decode worker). */
async function readBody(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    // Copy: undici may hand out views on pooled memory.
    const buf = Buffer.from(chunk);
    chunks.push(buf);
    size += buf.length;
  }
  const whole = Buffer.allocUnsafeSlow(size);
  let at = 0;
  for (const chunk of chunks) {
    chunk.copy(whole, at);
    at += chunk.length;
  }
  return whole;
}
