import type { Config } from '../../config/config.js';
import { extraLimits, requireBaseUrl } from '../../config/config.js';
import { charsetOf, toUtf8 } from '../../extract/charset.js';
import type { DecodedCsvPage } from '../../normalize/csv-page-decode.js';
import type { BlockDecoders } from '../../normalize/decoders.js';
import { nextLink } from '../../upstream/link-header.js';
import { bodyEndChecked, header, networkError, openStream } from '../../upstream/open-stream.js';
import { withRetry } from '../../upstream/with-retry.js';
import { isSyncError, SyncError } from '../../util/errors.js';
import type { ReadContext } from '../export-source.js';
import { checkCloseDelimited } from './csv-paging.js';

/** What a CSV page request accepts. */
export const ACCEPT = 'text/csv, application/csv;q=0.9, */*;q=0.1';

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
          delimited: bodyEndChecked(res.headers),
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
          endChecked: framing.delimited,
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
        retry: 'none',
      });
    }
    throw err;
  }
}

/** The time limit of one page request (`REPORTS_PAGE_DEADLINE_MS`). */
export function pageDeadline(config: Config): { ms: number; setting: string } {
  return { ms: config.pageDeadlineMs, setting: 'REPORTS_PAGE_DEADLINE_MS' };
}

/**
 * The API key for a request to `url`: only when `url` is on the configured upstream's origin. A `Link` (or a
 * resume URL) may point at the origin a redirect led to; the key must not follow it there (DESIGN.md §2).
 */
export function keyFor(config: Config, url: URL): string | undefined {
  return new URL(requireBaseUrl(config)).origin === url.origin ? config.apiKey : undefined;
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
