import { Readable } from 'node:stream';
import type { DuckDBConnection } from '@duckdb/node-api';
import { apiUrl } from '../../config/config.js';
import { extraLimits } from '../../config/config.js';
import { startDecoders } from '../../normalize/decoders.js';
import { KnownLines } from '../../normalize/known-lines.js';
import { decodeNdjson } from '../../normalize/ndjson-decode.js';
import { recordIdOf } from '../../normalize/reject.js';
import { isUtf8 } from 'node:buffer';
import { arrayElementTexts } from '../../schema/json-text.js';
import { validateWireReport } from '../../schema/report.js';
import { header, networkError, openStream, minSpeedOf } from '../../upstream/open-stream.js';
import { SyncError } from '../../util/errors.js';
import { currentHashes } from '../../warehouse/current-hashes.js';
import type { ExportSource, ReadContext, ReadOutcome, SourceItem } from '../export-source.js';
import { safeUrl as redactedUrl } from '../../util/safe-url.js';
import { isPastEndAnswer } from './csv-paging.js';
import { decidePage, type PageRecord } from './recent-paging.js';
import { PAGE_SEQ_STRIDE } from '../../normalize/csv-page-decode.js';

// A list page is held whole to parse it as one JSON array: bounded so a runaway body cannot exhaust memory.
const MAX_PAGE_BYTES = 256 * 1024 * 1024;

/**
 * The `recent` source: an incremental sync from the list endpoint (`REPORTS_LIST_PATH`, docs/upstream-contract.md rule 3: "the
 * latest published reports when no filter is given", newest first). It reads `?pageSize=N&page=K` from
 * page 1 and stops where {@link decidePage} says: at the first page whose reports are all already current
 * in the warehouse (by id, looked up through `lookup`, a connection of its own; changed ones on the pages
 * read are merged as updates), at the
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
  const pageSize = config.recentPageSize;
  const decoders = startDecoders(
    config.decodeWorkers,
    await KnownLines.empty('recent'),
    config.rejectRawMaxBytes,
    extraLimits(config),
  );
  try {
    let previousIds: (string | undefined)[] | undefined;
    let size: number | undefined; // a capped server's served size, once adopted (decidePage)
    for (let page = 1; ; page++) {
      const url = apiUrl(config, config.listPath);
      url.searchParams.set('pageSize', String(pageSize));
      url.searchParams.set('page', String(page));
      // Past page 1, some servers answer an error (400, 404, …) where the list has no more pages.
      const { values, texts, bytes, safeUrl, etag, lastModified } = await fetchPage(ctx, url).catch(
        (err: unknown) => {
          if (page > 1 && isPastEndAnswer(err))
            return {
              values: [],
              texts: [],
              bytes: 0,
              safeUrl: redactedUrl(url),
              etag: undefined,
              lastModified: undefined,
            };
          throw err;
        },
      );
      yield { kind: 'bytes', read: bytes, wire: bytes };
      if (page === 1) yield { kind: 'export', info: { url: safeUrl, etag, lastModified } };
      const records = await pageRecords(values, lookup);
      const decision = decidePage({
        page,
        pageSize,
        size,
        maxPages: config.recentMaxPages,
        records,
        previousIds,
      });
      if (decision.next || decision.use) {
        // The page's elements as NDJSON lines (white space outside strings may hold newlines, strings
        // cannot), decoded by the same rules as the NDJSON export; numbered page × 2^29 + row.
        const lines = texts.map((t) => t.replace(/[\r\n]/g, ' ')).join('\n');
        const body = Readable.from([Buffer.from(lines.length > 0 ? `${lines}\n` : '')]);
        for await (const block of decodeNdjson(body, {
          maxRecordBytes: config.maxRecordBytes,
          rejectRawMaxBytes: config.rejectRawMaxBytes,
          url: safeUrl,
          lineOffset: page * PAGE_SEQ_STRIDE,
          decoders,
        })) {
          for (const r of block.rejects) {
            const row = r.location.line - page * PAGE_SEQ_STRIDE;
            r.location = { page, row, line: row };
          }
          yield { kind: 'block', block };
        }
      }
      if (decision.next) {
        size = decision.size ?? size;
        previousIds = records.map((r) => r.id);
        continue;
      }
      const level = decision.complete ? 'info' : 'warn';
      ctx.logger[level]({ pages: page, stop: decision.reason }, 'recent: list read');
      if (decision.reason === 'repeated') {
        return {
          complete: false,
          reason: `list page ${page} repeats page ${page - 1} (the server ignored \`page\`?)`,
        };
      }
      if (decision.reason === 'max-pages') {
        ctx.logger.warn(
          { pages: page, pageSize },
          'recent: REPORTS_RECENT_MAX_PAGES pages read without reaching known reports: the gap is left to the next full export',
        );
        return { complete: false, reason: `stopped after ${page} list pages (REPORTS_RECENT_MAX_PAGES)` };
      }
      return { complete: true };
    }
  } finally {
    await decoders.close();
  }
}

/** GETs one list page and parses it as a JSON array. */
async function fetchPage(
  ctx: ReadContext,
  url: URL,
): Promise<{
  values: unknown[];
  texts: string[];
  /** Body size in bytes. */
  bytes: number;
  safeUrl: string;
  etag?: string | undefined;
  lastModified?: string | undefined;
}> {
  const res = await openStream(url, {
    dispatcher: ctx.dispatcher,
    apiKey: ctx.config.apiKey,
    maxRedirects: ctx.config.maxRedirects,
    minSpeed: minSpeedOf(ctx.config),
    signal: ctx.signal,
    headers: { accept: 'application/json' },
  });
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

/** The page's records as the stop rules see them: validated, and looked up among the current reports. */
async function pageRecords(values: readonly unknown[], lookup: DuckDBConnection): Promise<PageRecord[]> {
  const checked = values.map((value) => {
    const result = validateWireReport(value);
    return result.ok ? { id: result.report.id, valid: true } : { id: recordIdOf(value), valid: false };
  });
  const ids = [...new Set(checked.flatMap((c) => (c.valid && c.id !== undefined ? [c.id] : [])))];
  const current = await currentHashes(lookup, ids);
  return checked.map((c) => ({ ...c, known: c.valid && c.id !== undefined && current.has(c.id) }));
}
