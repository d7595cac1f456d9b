import type { BlockDecoders } from '../../normalize/decoders.js';
import { startSourceDecoders } from './source-decoders.js';
import { requestOptions } from '../../upstream/request-options.js';
import { Readable } from 'node:stream';
import type { DuckDBConnection } from '@duckdb/node-api';
import { apiUrl } from '../../config/config.js';
import { decodeNdjson } from '../../normalize/ndjson-decode.js';
import { recordIdOf, type DecodedBlock } from '../../normalize/reject.js';
import { isUtf8 } from 'node:buffer';
import { arrayElementTexts } from '../../schema/json-text.js';
import { normalizeTimestamp } from '../../schema/timestamp.js';
import { header, networkError, openStream } from '../../upstream/open-stream.js';
import { SyncError } from '../../util/errors.js';
import { currentHashes } from '../../warehouse/current-hashes.js';
import type { ExportSource, ReadContext, ReadOutcome, SourceItem } from '../export-source.js';
import { safeUrl as redactedUrl } from '../../util/safe-url.js';
import { isPastEndAnswer } from './csv-paging.js';
import { RecentPager, type PageRecord } from './recent-paging.js';
import { PAGE_SEQ_STRIDE } from '../../normalize/csv-page-decode.js';

// A list page is held whole to parse it as one JSON array: bounded so a runaway body cannot exhaust memory.
const MAX_PAGE_BYTES = 256 * 1024 * 1024;

/**
 * The `recent` source: an incremental sync from the list endpoint (`REPORTS_LIST_PATH`, docs/upstream-contract.md rule 3: "the
 * latest published reports when no filter is given", newest first). It reads `?pageSize=N&page=K` from
 * page 1 and stops where its pager (recent-paging.ts) says: once caught up, past the first page whose reports are all
 * already current in the warehouse (by id, looked up through `lookup`, a connection of its own; changed ones on
 * the pages read are merged as updates) and the reports created at its last one's instant, on a list that is
 * not newest first (incomplete), at the
 * end of the list, on a repeated page (incomplete), or after `REPORTS_RECENT_MAX_PAGES` pages (incomplete,
 * with a warning). Each array element goes through the same validation, quarantine and merge as an NDJSON
 * line (its raw text is the element re-serialised: the list body is one JSON document, not lines).
 *
 * `fullExport` is false: it sees a window of the list, never the whole, so no run of it infers a delete.
 * Locations are `page K, row R` (`line` repeats the row: the body has no meaningful lines).
 *
 * @throws SyncError `LIST_INVALID` (retryable: a cut body) when a page is not a JSON array or is over 256 MiB,
 *   or what `openStream` throws
 */
export function recentSource(lookup: DuckDBConnection): ExportSource {
  return {
    name: 'recent',
    fullExport: false,
    lineHashes: false,
    read: (ctx) => readRecent(ctx, lookup),
  };
}

async function* readRecent(
  ctx: ReadContext,
  lookup: DuckDBConnection,
): AsyncGenerator<SourceItem, ReadOutcome | undefined> {
  const { config } = ctx;
  const pager = new RecentPager(config.recentPageSize, config.recentMaxPages);
  const decoders = await startSourceDecoders(ctx, 'recent');
  try {
    for (;;) {
      const { page, pageSize } = pager.request();
      const url = apiUrl(config, config.listPath);
      url.searchParams.set('pageSize', String(pageSize));
      url.searchParams.set('page', String(page));
      const list = await fetchPage(ctx, url).catch((err: unknown) => {
        // Past page 1, some servers answer an error (400, 404, …) where the list has no more pages.
        if (page > 1 && isPastEndAnswer(err)) return emptyPage(url);
        throw err;
      });
      yield { kind: 'bytes', read: list.bytes, wire: list.bytes };
      if (page === 1) {
        yield {
          kind: 'export',
          info: { url: list.safeUrl, etag: list.etag, lastModified: list.lastModified },
        };
      }
      const blocks = await decodePage(ctx, decoders, page, list);
      const step = pager.onPage(await pageRecords(list.values, blocks, lookup));
      if (step.use) for (const block of blocks) yield { kind: 'block', block };
      for (const { level, fields, message } of step.logs) ctx.logger[level](fields, message);
      if (step.outcome) return step.outcome;
    }
  } finally {
    await decoders.close();
  }
}

/** A list page that is not there: an error answer past page 1 read as the end of the list. */
function emptyPage(url: URL): ListPage {
  return {
    values: [],
    texts: [],
    bytes: 0,
    safeUrl: redactedUrl(url),
    etag: undefined,
    lastModified: undefined,
  };
}

/**
 * The page's elements validated, quarantined and staged by the same rules as NDJSON lines (their texts as
 * sent, one a line: white space outside strings may hold newlines, strings cannot), numbered
 * page × {@link PAGE_SEQ_STRIDE} + row; rejects are located by page and row.
 */
async function decodePage(
  ctx: ReadContext,
  decoders: BlockDecoders,
  page: number,
  list: ListPage,
): Promise<DecodedBlock[]> {
  const lines = list.texts.map((t) => t.replace(/[\r\n]/g, ' ')).join('\n');
  const body = Readable.from([Buffer.from(lines.length > 0 ? `${lines}\n` : '')]);
  const blocks: DecodedBlock[] = [];
  for await (const block of decodeNdjson(body, {
    maxRecordBytes: ctx.config.maxRecordBytes,
    rejectRawMaxBytes: ctx.config.rejectRawMaxBytes,
    url: list.safeUrl,
    lineOffset: page * PAGE_SEQ_STRIDE,
    decoders,
  })) {
    for (const r of block.rejects) {
      const row = r.location.line - page * PAGE_SEQ_STRIDE;
      r.location = { page, row, line: row };
    }
    blocks.push(block);
  }
  return blocks;
}

/** One list page: its elements parsed and as sent, with what the response said of itself. */
interface ListPage {
  values: unknown[];
  texts: string[];
  /** Body size in bytes. */
  bytes: number;
  safeUrl: string;
  etag?: string | undefined;
  lastModified?: string | undefined;
}

/** GETs one list page and parses it as a JSON array. */
async function fetchPage(ctx: ReadContext, url: URL): Promise<ListPage> {
  const res = await openStream(
    url,
    requestOptions(ctx.config, ctx, url, { accept: 'application/json', deadline: 'page' }),
  );
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_PAGE_BYTES) {
        throw new SyncError('LIST_INVALID', `The list page ${res.url} is over ${MAX_PAGE_BYTES} bytes`, {
          context: { url: res.url, limit: MAX_PAGE_BYTES },
        });
      }
      chunks.push(Buffer.from(chunk));
    }
  } catch (err) {
    throw networkError(err, res.url);
  } finally {
    res.body.destroy();
  }
  const bytes = Buffer.concat(chunks, size);
  // JSON is UTF-8 (RFC 8259): a page that is not is refused, never read with substitutes (docs/guarantees.md).
  if (!isUtf8(bytes)) {
    throw new SyncError(
      'LIST_INVALID',
      `The list page ${res.url} is not valid UTF-8: nothing of it was loaded`,
      {
        context: { url: res.url },
      },
    );
  }
  // A leading BOM is dropped (RFC 8259 §8.1 lets a parser ignore it; JSON.parse does not).
  const text = new TextDecoder('utf-8').decode(bytes); // as fetch-stats.ts: the decoder drops it
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new SyncError('LIST_INVALID', `The list page ${res.url} is not JSON (${(err as Error).message})`, {
      context: { url: res.url, excerpt: text.slice(0, 200) },
      retryable: true,
      cause: err,
    });
  }
  if (!Array.isArray(body)) {
    throw new SyncError('LIST_INVALID', `The list page ${res.url} is not a JSON array of reports`, {
      context: { url: res.url, excerpt: text.slice(0, 200) },
    });
  }
  return {
    values: body as unknown[],
    // Each element as sent: unknown fields keep their numbers' text, repeated keys are seen.
    texts: arrayElementTexts(text) ?? [],
    bytes: size,
    safeUrl: res.url,
    etag: header(res.headers, 'etag'),
    lastModified: header(res.headers, 'last-modified'),
  };
}

/**
 * The page's records as the stop rules see them: valid unless the decoders quarantined their row (each
 * element is validated once, there), and looked up by id among the current reports.
 */
async function pageRecords(
  values: readonly unknown[],
  blocks: readonly DecodedBlock[],
  lookup: DuckDBConnection,
): Promise<PageRecord[]> {
  const rejectedRows = new Set(blocks.flatMap((b) => b.rejects.map((r) => r.location.row)));
  const checked = values.map((value, i) => {
    const valid = !rejectedRows.has(i + 1);
    return { id: recordIdOf(value), valid, createdAt: valid ? createdAtMs(value) : undefined };
  });
  const ids = [...new Set(checked.flatMap((c) => (c.valid && c.id !== undefined ? [c.id] : [])))];
  const current = await currentHashes(lookup, ids);
  return checked.map((c) => ({ ...c, known: c.valid && c.id !== undefined && current.has(c.id) }));
}

/** A list element's `createdAt` in ms since the epoch (by the report schema's timestamp rule), or undefined. */
function createdAtMs(value: unknown): number | undefined {
  const text = (value as { createdAt?: unknown } | null)?.createdAt;
  const iso = typeof text === 'string' ? normalizeTimestamp(text) : null;
  return iso === null ? undefined : Date.parse(iso);
}
