import type { BlockDecoders } from '../../normalize/decoders.js';
import { startSourceDecoders } from './source-decoders.js';
import { Readable } from 'node:stream';
import type { DuckDBConnection } from '@duckdb/node-api';
import { apiUrl } from '../../config/config.js';
import { decodeNdjson } from '../../normalize/ndjson-decode.js';
import { recordIdOf, type DecodedBlock } from '../../normalize/reject.js';
import { normalizeTimestamp } from '../../schema/timestamp.js';
import { currentWireTexts, type StoredWire } from '../../warehouse/current-wire.js';
import { patchElement } from './recent-patch.js';
import type { ExportSource, ReadContext, ReadOutcome, SourceItem } from '../export-source.js';
import { safeUrl as redactedUrl } from '../../util/safe-url.js';
import { isPastEndAnswer } from './csv-paging.js';
import { fetchPage, type ListPage } from './recent-list-page.js';
import { RecentPager, type PageRecord } from './recent-paging.js';
import { PAGE_SEQ_STRIDE } from '../../normalize/csv-page-decode.js';
import { withRetry } from '../../upstream/with-retry.js';

/**
 * The `recent` source: an incremental sync from the list endpoint (`REPORTS_LIST_PATH`, docs/upstream-contract.md rule 3: "the
 * latest published reports when no filter is given", newest first). It reads `?pageSize=N&page=K` (or the next page a page names: `Link: rel="next"`, a next URL in its body) from
 * page 1 and stops where its pager (recent-paging.ts) says: once caught up, past the first page whose reports are all
 * already current in the warehouse (by id, looked up through `lookup`, a connection of its own; changed ones on
 * the pages read are merged as updates) and the reports created at its last one's instant, on a list that is
 * not newest first (incomplete), at the
 * end of the list, on a repeated page (incomplete), or after `REPORTS_RECENT_MAX_PAGES` pages (incomplete,
 * with a warning). Each array element goes through the same validation, quarantine and merge as an NDJSON
 * line (its raw text is the element as sent: the list body is one JSON document, not lines). An element of
 * a report the warehouse holds changes only the fields it gives: what it leaves out is taken from the
 * stored report (recent-patch.ts), so a list of summaries blanks nothing.
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
  const patches: PatchTally = { elements: 0, kept: new Set(), ignored: new Set() };
  try {
    for (;;) {
      const { page, pageSize, url: linked } = pager.request();
      // The page the last one named (a cursor-paged list), else page K by number.
      const url = linked ?? apiUrl(config, config.listPath);
      if (!linked) {
        url.searchParams.set('pageSize', String(pageSize));
        url.searchParams.set('page', String(page));
      }
      // Each page retried on its own: a 429 on page 5 waits and asks page 5 again, not page 1.
      const fetched = withRetry(
        `list page ${page}`,
        config,
        ctx.logger,
        () => fetchPage(ctx, url),
        ctx.signal,
      );
      const list = await fetched.catch((err: unknown) => {
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
      const decoded = await decodePage(ctx, decoders, page, list);
      const { records, stored } = await pageRecords(list, decoded, lookup);
      const blocks = (await completedPage(ctx, decoders, page, list, records, stored, patches)) ?? decoded;
      const step = pager.onPage(records, { url, next: list.next });
      if (step.use) for (const block of blocks) yield { kind: 'block', block };
      for (const { level, fields, message } of step.logs) ctx.logger[level](fields, message);
      if (step.outcome) {
        logPatches(ctx, patches);
        return step.outcome;
      }
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
      r.location = { page, row, line: row, element: true };
    }
    blocks.push(block);
  }
  return blocks;
}

/**
 * The page's records (its parsed `values` and their `texts` as sent) as the stop rules see them: valid
 * unless the decoders quarantined their row (each element is validated once, there), and looked up by id
 * among the current reports (`stored`: id → the report's canonical wire JSON).
 */
async function pageRecords(
  list: Pick<ListPage, 'values' | 'texts'>,
  blocks: readonly DecodedBlock[],
  lookup: DuckDBConnection,
): Promise<{ records: PageRecord[]; stored: Map<string, StoredWire> }> {
  const rejectedRows = new Set(blocks.flatMap((b) => b.rejects.map((r) => r.location.row)));
  const checked = list.values.map((value, i) => {
    const valid = !rejectedRows.has(i + 1);
    // With its text: an integer id past 2^53 − 1 is its digits, as the decoders staged it.
    const id = recordIdOf(value, list.texts[i]);
    return { id, valid, createdAt: valid ? createdAtMs(value) : undefined };
  });
  const ids = [...new Set(checked.flatMap((c) => (c.valid && c.id !== undefined ? [c.id] : [])))];
  const stored = await currentWireTexts(lookup, ids);
  const records = checked.map((c) => ({ ...c, known: c.valid && c.id !== undefined && stored.has(c.id) }));
  return { records, stored };
}

/** A list element's `createdAt` in ms since the epoch (by the report schema's timestamp rule), or undefined. */
function createdAtMs(value: unknown): number | undefined {
  const text = (value as { createdAt?: unknown } | null)?.createdAt;
  const iso = typeof text === 'string' ? normalizeTimestamp(text) : null;
  return iso === null ? undefined : Date.parse(iso);
}

/** The elements a run completed from stored reports (recent-patch.ts), and the field names involved. */
interface PatchTally {
  elements: number;
  kept: Set<string>;
  ignored: Set<string>;
}

/**
 * The page decoded again with each element of a known report completed from the stored report where the
 * list leaves fields out (`patchElement`), or undefined when no element needed it (the usual case: the
 * list carries what the exports carry). Only valid elements are completed, so a quarantined one keeps the
 * text it was sent with.
 */
async function completedPage(
  ctx: ReadContext,
  decoders: BlockDecoders,
  page: number,
  list: ListPage,
  records: readonly PageRecord[],
  stored: ReadonlyMap<string, StoredWire>,
  tally: PatchTally,
): Promise<DecodedBlock[] | undefined> {
  const texts = [...list.texts];
  let patched = 0;
  records.forEach((r, i) => {
    const text = texts[i];
    const have = r.known && r.id !== undefined ? stored.get(r.id) : undefined;
    if (text === undefined || have === undefined) return;
    const patch = patchElement(text, have);
    if (!patch) return;
    texts[i] = patch.text;
    patched++;
    for (const f of patch.kept) tally.kept.add(f);
    for (const f of patch.ignored) tally.ignored.add(f);
  });
  if (patched === 0) return undefined;
  tally.elements += patched;
  return decodePage(ctx, decoders, page, { ...list, texts });
}

/** One warning a run when the list's reports differ in their fields from the stored ones. */
function logPatches(ctx: ReadContext, tally: PatchTally): void {
  if (tally.elements === 0) return;
  const kept = [...tally.kept].join(', ') || 'none';
  const ignored = [...tally.ignored].join(', ') || 'none';
  ctx.logger.warn(
    { reports: tally.elements, kept: [...tally.kept], ignored: [...tally.ignored] },
    `recent: the list's reports do not carry the fields the stored ones have: ${tally.elements} known reports ` +
      `updated only in the fields the list gives (kept from the warehouse: ${kept}; list fields the exports ` +
      `lack, left out: ${ignored}); full exports bring the rest`,
  );
}
