import { requestOptions } from '../../upstream/request-options.js';
import type { Config } from '../../config/config.js';
import { apiUrl, extraLimits } from '../../config/config.js';
import { charsetOf, toUtf8 } from '../../upstream/charset.js';
import type { DecodedCsvPage } from '../../normalize/csv-page-decode.js';
import type { BlockDecoders } from '../../normalize/decoders.js';
import { nextLink } from '../../upstream/link-header.js';
import { bodyEndChecked, header, networkError } from '../../upstream/http-answers.js';
import { openStream } from '../../upstream/open-stream.js';
import { safeUrl } from '../../util/safe-url.js';
import { readBody, type BodyLimit } from '../../upstream/read-body.js';
import { withRetry } from '../../upstream/with-retry.js';
import { isSyncError, SyncError } from '../../util/errors.js';
import type { ReadContext } from '../export-source.js';
import { checkCloseDelimited, unterminatedEnd } from './csv-paging.js';
import { cacheAgeOf, pageValidator } from './export-validators.js';

/** What a CSV page request accepts. */
export const ACCEPT = 'text/csv, application/csv;q=0.9, */*;q=0.1';

/**
 * Reads of a close-delimited short page at most: it is kept once two reads give as many rows (a server's
 * last page, or its cap), else the fullest of them.
 */
const CONFIRM_READS = 3;

/**
 * Bytes a CSV page may hold (decoded). A page is held whole while it is decoded (a 119 MB page took a sync
 * to ~2 GB RSS), so an endless body or a decompression bomb must stop somewhere; as high as the list page's
 * bound, so that a static file behind every page's redirect (the whole export in one answer) still fits.
 */
export const CSV_PAGE_MAX_BYTES = 256 * 1024 * 1024;

/** Pages fetched ahead of the one being staged (downloaded and decoding in the workers meanwhile). */
export const PAGES_AHEAD = 3;

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
export class PagesAhead {
  /** Pages started and not yet taken, in page order. */
  readonly #queue: PageFetch[] = [];
  /** The page started last (taken or not): its `Link` leads the window on. */
  #tail: PageFetch | undefined;
  /** Rows of the fullest page decoded so far (what a close-delimited page is compared with). */
  #fullest = 0;

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
    entry.fetched = fetchPage({ ...this.ctx, signal }, url, page, this.decoders, {
      downloaded: (next) => {
        entry.next = next;
        if (this.#tail === entry) this.#extend();
      },
      fullest: () => this.#fullest,
      decoded: (rows) => (this.#fullest = Math.max(this.#fullest, rows)),
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

export interface FetchedPage {
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
  /** The answer's `Age` (s), when a cache served it. */
  cacheAge?: number | undefined;
  /** An error answer past the last page, or a 204 (no content), read as an empty page ({@link pastEndPage}). */
  pastEnd?: true | undefined;
  /** Close-delimited and shorter than a full page: maybe cut at a row's end (read again, {@link fetchPage}). */
  unconfirmedShort?: true | undefined;
  /** Close-delimited and ending without a line break, read once: maybe cut in its last row (read again). */
  unconfirmedEnd?: true | undefined;
}

/**
 * GETs one page and decodes it in a decode worker, retrying it alone (429/5xx, resets, a body cut short) as
 * with-retry.ts says. A close-delimited page shorter than a full page is read again (up to
 * {@link CONFIRM_READS} reads) and kept once two reads agree, else the fullest read is kept: such a body
 * cannot tell a connection closed at a row's end from its end (`checkCloseDelimited` of csv-paging.ts).
 * One ending without a line break is read again too, and kept once two reads give the same bytes.
 * `on.downloaded` is called with the page's `Link: rel="next"` once its body is in (before decoding); `on.fullest` gives the rows of the fullest page decoded so far, `on.decoded` reports
 * this page's. Once its retries are spent the error is no longer retryable: the runner must not restart
 * the whole export for a page that keeps failing.
 */
async function fetchPage(
  ctx: ReadContext,
  url: URL,
  page: number,
  decoders: BlockDecoders,
  on: PageEvents,
): Promise<FetchedPage> {
  const short: EarlierReads = { rows: undefined, ends: new Set() };
  const read = () =>
    withRetry(
      `CSV page ${page}`,
      ctx.config,
      ctx.logger,
      () => fetchPageOnce(ctx, url, page, decoders, on, short),
      ctx.signal,
    );
  try {
    let fetched = await read();
    for (let reads = 1; isUnconfirmed(fetched) && reads < CONFIRM_READS; reads++) {
      const rows = fetched.decoded.page.rows;
      ctx.logger.info(
        { page, rows, url: fetched.url },
        fetched.unconfirmedEnd
          ? 'CSV page close-delimited and ending without a line break: read again to confirm'
          : 'CSV page short and close-delimited: read again to confirm',
      );
      short.rows = rows;
      const again = await read();
      // The fuller read wins: a body ended by a closed connection can have lost rows, not gained them.
      if (again.decoded.page.rows >= rows) fetched = again;
    }
    return fetched;
  } catch (err) {
    if (isSyncError(err) && err.retryable) {
      throw new SyncError(err.code, `${err.message} (page ${page}: retries spent)`, {
        context: { ...err.context, page },
        cause: err,
        retry: 'none',
      });
    }
    throw err;
  }
}

/** What the reads of a page before this one showed (see {@link fetchPage}). */
interface EarlierReads {
  /** Rows of a read taken for cut short. */
  rows: number | undefined;
  /** Digests of the close-delimited reads that ended without a line break (`unterminatedEnd` of csv-paging.ts). */
  ends: Set<string>;
}

function isUnconfirmed(fetched: FetchedPage): boolean {
  return fetched.unconfirmedShort === true || fetched.unconfirmedEnd === true;
}

/** What {@link fetchPage} reports as a page comes in (see there). */
interface PageEvents {
  downloaded: (next: URL | undefined) => void;
  fullest: () => number;
  decoded: (rows: number) => void;
}

/** One attempt of {@link fetchPage}: GET, charset, decode, and the check of a close-delimited body. */
async function fetchPageOnce(
  ctx: ReadContext,
  url: URL,
  page: number,
  decoders: BlockDecoders,
  on: PageEvents,
  short: EarlierReads,
): Promise<FetchedPage> {
  const { config } = ctx;
  const headers = page === 1 ? ctx.conditional : undefined;
  const res = await openStream(
    url,
    requestOptions(config, ctx, url, { accept: ACCEPT, headers, deadline: 'page' }),
  );
  if (res.status === 204 && page > 1) {
    // No content past page 1 answers as a 404 does: past the end, no validator to compare, and the end
    // confirmed by /stats (csv-pager.ts). Its empty body is not a short page to read again.
    res.body.destroy();
    on.downloaded(undefined);
    return pastEndPage(res.finalUrl);
  }
  let body: Buffer;
  let wireBytes = 0;
  try {
    body = await readBody(res.body, pageLimit(config, page, res.url));
  } catch (err) {
    throw networkError(err, res.url);
  } finally {
    wireBytes = res.wireBytes();
    res.body.destroy();
  }
  // A declared charset is honoured (or the page refused), never read as UTF-8 with U+FFFD.
  body = toUtf8(body, charsetOf(header(res.headers, 'content-type')), res.url);
  const next = nextLink(res.headers.link, res.finalUrl);
  on.downloaded(next);
  const delimited = bodyEndChecked(res.headers);
  const unterminated = !delimited && body.length > 0 && body[body.length - 1] !== 0x0a;
  const end = unterminated ? unterminatedEnd(body, short.ends) : undefined;
  const framing = { delimited, unterminated: end === 'cut', linked: res.headers.link !== undefined };
  const bytes = body.length;
  // The body's memory moves to the worker: `body` is unusable from here on.
  const decoded = await decoders.decodePage(body, {
    page,
    maxRecordBytes: config.maxRecordBytes,
    rejectRawMaxBytes: config.rejectRawMaxBytes,
    url: res.url,
    extraLimits: extraLimits(config),
    endChecked: framing.delimited,
  });
  // Short: fewer rows than the fullest page so far (before any, than asked). A capped server's pages are
  // all short, so a short page counts as cut unless reading it again gives as many rows.
  const rows = decoded.page.rows;
  const expected = short.rows === rows ? 0 : on.fullest() || config.csvPageSize;
  try {
    checkCloseDelimited(framing, rows, { page, url: res.url, pageSize: expected });
  } catch (err) {
    if (!framing.unterminated) short.rows = rows; // short with a Link, not provably cut
    throw err;
  }
  on.decoded(rows);
  // Short without a Link, its end a line break: the end of the export, or a connection closed at a row's
  // end. Only reading it again tells (fetchPage); the paging rule would read past it on /stats' word alone.
  const unconfirmedShort = !framing.delimited && rows < expected ? (true as const) : undefined;
  const unconfirmedEnd = end === 'first' ? (true as const) : undefined;
  const read = { decoded, bytes, wireBytes, url: res.url, next, unconfirmedShort, unconfirmedEnd };
  return { ...read, ...pageValidator(res.headers), cacheAge: cacheAgeOf(res.headers) };
}

/** The bound of a CSV page's body: {@link CSV_PAGE_MAX_BYTES}, past which it fails, saying what to change. */
function pageLimit(config: Config, page: number, url: string): BodyLimit {
  const tooLarge = () =>
    new SyncError(
      'CSV_PAGE_TOO_LARGE',
      `Page ${page} of ${url} is over ${CSV_PAGE_MAX_BYTES / 2 ** 20} MiB, more than a CSV page is read into ` +
        `memory: lower REPORTS_CSV_PAGE_SIZE (${config.csvPageSize} rows asked); if the server ignores pageSize ` +
        '(one file for the whole export), sync its NDJSON export instead (--source ndjson), which is streamed',
      { context: { url, page, limitBytes: CSV_PAGE_MAX_BYTES, pageSize: config.csvPageSize } },
    );
  return { maxBytes: CSV_PAGE_MAX_BYTES, tooLarge };
}

/** URL of page `page` of the export: `pageSize` and the configured page parameter set. */
export function csvPageUrl(config: Config, page: number): URL {
  const url = apiUrl(config, config.csvPath);
  url.searchParams.set('pageSize', String(config.csvPageSize));
  // Pages are numbered from 1 here; a server counting from 0 is asked `page - 1` (REPORTS_CSV_FIRST_PAGE).
  url.searchParams.set(config.csvPageParam, String(page - 1 + config.csvFirstPage));
  return url;
}

/**
 * An empty page standing for an error answer past the last page (see `isPastEndAnswer` of csv-paging.ts):
 * no rows, no validator (`pastEnd` set so the validator checks skip it).
 */
export function pastEndPage(url: URL): FetchedPage {
  const none = { bytes: new Uint8Array(0), lines: 0, longest: 0 };
  const page = { columns: [], rows: 0, parsed: 0, rejected: 0, lines: 0, skippedLines: 0, bytes: 0 };
  const block = { rows: none, seen: none, rejects: [], read: 0, loaded: 0, rejected: 0 };
  const decoded = { page: { ...page, keysDigest: '0:' }, block };
  return { decoded, bytes: 0, wireBytes: 0, url: safeUrl(url), next: undefined, pastEnd: true };
}
