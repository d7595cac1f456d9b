/**
 * When a paged CSV export ends: a pure decision over what the pages said so far, kept apart from the
 * fetching so it can be property-tested over generated page sequences (test/unit/csv-paging.test.ts).
 *
 * The rule (docs/guarantees.md, "Deletes and completeness"): a page shorter than the page size is the end
 * only when nothing says otherwise. What says otherwise:
 * - a `Link: rel="next"` on the page (followed, even from an empty page, unless more than
 *   {@link MAX_EMPTY_LINKED_PAGES} empty pages in a row still link on after the `/stats` total was reached:
 *   a server linking on past its end);
 * - an upstream `/stats` total the rows read so far have not reached (the next page by number is read);
 * - the first page (with rows) already shorter than asked while the total is unknown or not reached: the
 *   server caps `pageSize`, so its served size is adopted as the page size and reading goes on.
 * A server may have holes (a header-only page mid-export); up to {@link MAX_GAP_PAGES} such pages in a row
 * are read past while `/stats` says rows are missing. After that the export stops *incomplete*: what was
 * read is kept, no tombstones are inferred.
 *
 * Also here, as pure as the rest: when a page whose body was close-delimited counts as cut short
 * ({@link checkCloseDelimited}).
 */

import { createHash } from 'node:crypto';
import { isSyncError, SyncError } from '../../util/errors.js';

/** Consecutive short or empty pages read past (on the word of `/stats`) before giving up as incomplete. */
export const MAX_GAP_PAGES = 2;

/**
 * Consecutive empty pages that still link on, read past once the `/stats` total is reached, before the
 * export ends complete: a scan-style server may link through a few empty pages to more rows, and rows read
 * twice (a report repeated across pages) can reach the total before the last page.
 */
export const MAX_EMPTY_LINKED_PAGES = 10;

/** What one page said, with what the pages before it said. */
export interface PageFacts {
  /** 1-based number of the page just read. */
  page: number;
  /** Data rows on it (quarantined ones included). */
  rows: number;
  /** `pageSize` asked for in the URL. */
  asked: number;
  /** The page size in force: `asked`, or the served size adopted from a capped first page. */
  size: number;
  /** The page sent `Link: rel="next"`. */
  linkNext: boolean;
  /** An earlier page sent a `Link` (the server pages by links, so their end is its end). */
  linkSeen: boolean;
  /** Data rows of every page read, this one included. */
  rowsSoFar: number;
  /** Short or empty pages read past right before this one (see {@link MAX_GAP_PAGES}). */
  gap: number;
  /** The upstream `/stats` total, when known (it is asked for only when a page may be the end). */
  statsTotal: number | undefined;
}

/** What to do after a page. `size` is the page size in force from the next page on. */
export type PagingDecision =
  | { action: 'continue'; via: 'link' | 'number'; size: number; gap: number; reason?: string }
  | { action: 'stop-complete'; reason: string }
  | { action: 'stop-incomplete'; reason: string };

/**
 * True when the page may be the end of the export, so the `/stats` total is worth knowing before
 * {@link decidePaging} is asked: no `Link` next, and the page is short (or the server's links ran out).
 */
export function mayBeEnd(facts: Pick<PageFacts, 'rows' | 'size' | 'linkNext' | 'linkSeen'>): boolean {
  // An empty page that links on may be past the end too: some servers link on from every page.
  if (facts.linkNext) return facts.rows === 0;
  return facts.rows < facts.size || facts.linkSeen;
}

/** Decides what follows the page `facts` describes (see the module comment for the rule). Pure. */
export function decidePaging(facts: PageFacts): PagingDecision {
  const { page, rows, asked, linkNext, rowsSoFar, statsTotal } = facts;
  const totalReached = statsTotal !== undefined && rowsSoFar >= statsTotal;
  const numbers = `page ${page}: ${rows} rows (pageSize ${facts.size}${facts.size !== asked ? `, asked ${asked}` : ''}), ${rowsSoFar} rows so far, /stats total ${statsTotal ?? 'unknown'}`;
  // A capped first page (the first with rows): the served size becomes the page size.
  const capped = rows > 0 && rows < asked && facts.size === asked && rowsSoFar === rows;
  const size = capped ? rows : facts.size;
  const gap = rows < size ? facts.gap + 1 : 0;
  if (linkNext) {
    // A server that links on from every page, past its last row: the end once /stats confirms it.
    if (rows === 0 && totalReached && gap > MAX_EMPTY_LINKED_PAGES) {
      return {
        action: 'stop-complete',
        reason: `end of the export: empty pages that still link on (${numbers})`,
      };
    }
    if (rows === 0 && !totalReached && gap > MAX_GAP_PAGES) {
      return {
        action: 'stop-incomplete',
        reason: `${gap} empty pages in a row that still link on (${numbers})`,
      };
    }
    return { action: 'continue', via: 'link', size, gap };
  }
  if (!mayBeEnd({ ...facts, size: facts.size })) return { action: 'continue', via: 'number', size, gap: 0 };
  if (totalReached) return { action: 'stop-complete', reason: `end of the export (${numbers})` };
  if (capped) {
    return {
      action: 'continue',
      via: 'number',
      size,
      gap: 0,
      reason: `the server serves ${rows} rows per page when ${asked} are asked: adopted, reading on (${numbers})`,
    };
  }
  if (statsTotal === undefined) return { action: 'stop-complete', reason: `end of the export (${numbers})` };
  if (gap > MAX_GAP_PAGES) {
    return {
      action: 'stop-incomplete',
      reason:
        `${gap} short pages in a row and /stats says ${statsTotal - rowsSoFar} rows are still missing (${numbers})` +
        (statsTotal - rowsSoFar <= size
          ? ': about one page; if the server numbers its pages from 0, set REPORTS_CSV_FIRST_PAGE=0'
          : ''),
    };
  }
  return {
    action: 'continue',
    via: 'number',
    size,
    gap,
    reason: `short page before the /stats total is reached: reading on (${numbers})`,
  };
}

/** A page that repeats the keys of an earlier page read, with what the pages before it showed. */
export interface RepeatFacts {
  /** 1-based number of the repeating page. */
  page: number;
  /** The page it repeats. */
  repeated: number;
  /** A page before it was full (as many rows as the page size in force). */
  fullBefore: boolean;
  /** Where the repeating page was asked (safe URL). */
  url: string;
  /** What a server repeating page 1 as page 2 ignores (the page parameter, or the `Link`'s page). */
  ignored: string;
}

/**
 * What a repeated page means; it is never staged. The previous page again, after a full page and once
 * paging worked (page 2 differed from page 1): the server answers a page past its end with its last page,
 * so the export ended there, complete (the /stats total and the tombstone guards still compare counts).
 * Page 2 repeating page 1: the server ignores the page asked. An older page: it answers a page it does not
 * have with an earlier one. Both stop the export incomplete.
 */
export function repeatedPage(facts: RepeatFacts): { complete: boolean; reason: string } {
  const { page, repeated } = facts;
  const again = `page ${page} repeats the keys of page ${repeated}`;
  if (repeated === page - 1 && page > 2 && facts.fullBefore) {
    const reason = `${again}: the server answers a page past its last with its last page; end of the export`;
    return { complete: true, reason };
  }
  const stopped = 'stopped, the export is incomplete';
  if (repeated === 1 && page === 2) {
    return { complete: false, reason: `${again}: the server ignores ${facts.ignored}; ${stopped}` };
  }
  const earlier = 'the server answers a page it does not have with an earlier one';
  return { complete: false, reason: `${again} (asked as ${facts.url}): ${earlier}; ${stopped}` };
}

/**
 * A close-delimited body (neither `Content-Length` nor chunked framing: HTTP/1.1 ends it by closing the
 * connection) cannot tell a cut connection from its end, so undici cannot catch the cut. Such a page counts
 * as cut short when it ends without a line break and a read before gave other bytes ({@link unterminatedEnd}),
 * or when it holds fewer rows than a full page yet links a next page: either way the rest of the page would
 * be lost silently (`csv:cut`). (The caller reads a short page once more and keeps it when it holds as many
 * rows again: a server capping its pages.)
 *
 * @param framing whether the response was length-delimited or chunked, ended without a line break unlike
 *   a read before it, and sent a `Link` header
 * @param rows data rows of the page
 * @param where `pageSize`: the rows a full page holds as far as is known (0: no page counts as short)
 * @throws SyncError `BODY_TRUNCATED` (retryable: the page is fetched again)
 */
export function checkCloseDelimited(
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
        ? 'ending without a line break, other bytes than a read of it before'
        : `of ${rows} rows (pageSize ${where.pageSize}) that links a next page`),
    { context: { url: where.url, page: where.page, rows }, retry: 'request' },
  );
}

/**
 * How a close-delimited body ending without a line break reads. RFC 4180 §2.2 allows a last record without
 * one, but a connection cut in the last row looks the same (a cut in its last cell even leaves a whole row):
 * `confirmed` once a read of the page gave the same bytes before (a cut rarely repeats byte for byte),
 * `first` on the first such read (read it again to tell), `cut` when the reads before gave other bytes.
 *
 * @param reads digests of the page's earlier reads that ended so (this read's is added)
 */
export function unterminatedEnd(body: Uint8Array, reads: Set<string>): 'confirmed' | 'first' | 'cut' {
  const digest = createHash('sha256').update(body).digest('base64');
  if (reads.has(digest)) return 'confirmed';
  reads.add(digest);
  return reads.size === 1 ? 'first' : 'cut';
}

/**
 * Statuses some servers answer for a page past the last page instead of an empty page, asked for by number
 * or by a `Link` (a server that links on from its last page). Such an answer is read as an empty page; it
 * ends the export complete only when the `/stats` total confirms every row was read.
 */
const PAST_END_STATUS = new Set([400, 404, 410, 416]);

/** True for an `HTTP_STATUS` error of {@link PAST_END_STATUS}. */
export function isPastEndAnswer(err: unknown): boolean {
  return isSyncError(err, 'HTTP_STATUS') && PAST_END_STATUS.has(Number(err.context.status));
}
