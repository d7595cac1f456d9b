import { stopStep, type PageDecision, type RecentStep } from './recent-stop.js';

/**
 * The stop rules of the `recent` source, as pure decisions over one list page at a time (no I/O), so they
 * can be checked over generated pages.
 */

export type { PageDecision, RecentStep, StopReason } from './recent-stop.js';

/** One record of a list page as the stop rules see it. */
export interface PageRecord {
  /** The record's `id`, when it has a usable one. */
  id: string | undefined;
  /** The record validates as a report. */
  valid: boolean;
  /** Valid, and its id is a current report of the warehouse (not tombstoned), whatever its content now. */
  known: boolean;
  /** Its `createdAt` in ms since the epoch, when valid and given (the list's order: newest first). */
  createdAt?: number | undefined;
}

/** Input of {@link decidePage}. */
export interface PageInput {
  /** 1-based number of the page just read. */
  page: number;
  /** `pageSize` asked for. */
  pageSize: number;
  /** The page size in force: `pageSize`, or the length of a short page 1 once page 2 showed more follow. */
  size?: number | undefined;
  /** Largest number of pages a run reads. */
  maxPages: number;
  records: readonly PageRecord[];
  /** Ids of the previous page in order (`undefined` on page 1). */
  previousIds?: readonly (string | undefined)[] | undefined;
  /** `createdAt` (ms) of the last valid record read before this page that had one. */
  previousCreatedAt?: number | undefined;
  /**
   * Set once a page was all known: the `createdAt` (ms) of its last report. Reports created at that same
   * instant may follow on the next pages (the list breaks ties by id); the run has caught up at the first
   * page holding an older report.
   */
  tieAt?: number | undefined;
  /** The page names a next page (`Link: rel="next"`, a next URL in its body): it is not the last, even short. */
  linkNext?: boolean | undefined;
  /** An earlier page named its next page: the list pages by links, so a page naming none is the last. */
  linkSeen?: boolean | undefined;
}

/**
 * Decides what follows a list page, in this order:
 * 1. an empty page ends the list (`end`, complete), unless it names its next page (`linkNext`): then that
 *    page is read (`max-pages`, incomplete, when this one is page `maxPages`);
 * 2. a page whose ids equal the previous page's, in order, is a repeat (`repeated`, incomplete, its records
 *    are dropped: they were all just read), unless it repeats a page 1 shorter or longer than `pageSize`: the
 *    server ignores paging, and the list was that page (`end`). A window that merely shifted (reports published between two
 *    reads) overlaps the previous page only in part and is read normally: the merge dedupes by id;
 * 3. a valid record newer (`createdAt`) than the one before it, on this page or the previous one, means
 *    the list is not newest first (`unordered`, incomplete, the page is used): rule 4 would stop at known
 *    reports with new ones still to come, so new reports past the pages read are left to the next full export;
 * 4. a page with at least one valid record and every valid record known is where the run has caught up
 *    (`caught-up`, complete) once the reports created at the instant of its last one are all read: the
 *    list breaks ties by id, so a report created at that instant but published later can sort after known
 *    ones. The next page is read too (`tieAt`), and the run has caught up at the first page that holds an
 *    older report (or ends the list); a short page 1 all known reads page 2 the same way (rule 5: it may be
 *    a capping server's full page). Known means the id, not the content: the list is ordered by `createdAt`, so a
 *    status move of an older report says nothing about where the new reports end, and status moves are
 *    spread over the whole list (measured: a simulated day moved a report on every page of 1,000, so a
 *    content rule read the whole list). Changed reports on the pages read are merged as updates anyway; the
 *    others wait for the next full export. Records that fail validation neither stop nor extend the run:
 *    they are quarantined whichever page they are on; a page of only invalid records is read past;
 * 5. a page shorter than the page size in force is the last one (`end`, complete), but for a short page 1:
 *    the server may cap `pageSize` (the upstream names no maximum: docs/upstream-contract.md), so page 2 is read, and page 1's length is
 *    the size in force from then on (`size`);
 * 6. page `maxPages` is the last one read (`max-pages`, incomplete; `caught-up` when rule 4 applies);
 * 7. otherwise the next page is read.
 *
 * A list that names its next page (`linkNext`, a cursor-paged server) is read by its links: a short page
 * that links on is not the last (rule 5 does not apply), and once a page linked on, a page that names
 * no next page is the last (`end`, complete).
 */
export function decidePage(input: PageInput): PageDecision {
  const decision = decideByOrder(input);
  if (decision.next && input.linkSeen === true && input.linkNext !== true) {
    return { next: false, reason: 'end', complete: true, use: true };
  }
  return decision;
}

function decideByOrder(input: PageInput): PageDecision {
  const { records } = input;
  if (records.length === 0) {
    // A page naming its next page is no end, empty or not: a cursor-paged list may filter a page empty.
    if (input.linkNext !== true) return { next: false, reason: 'end', complete: true, use: true };
    if (input.page >= input.maxPages) return { next: false, reason: 'max-pages', complete: false, use: true };
    return { next: true };
  }
  if (input.previousIds !== undefined && sameIds(records, input.previousIds)) {
    // Page 1 read again, shorter or longer than asked: the server ignores `page` (and `pageSize`, when
    // longer: an Open311 server sends its whole list), and the list was all on page 1.
    const whole = input.page === 2 && input.previousIds.length !== input.pageSize;
    return whole
      ? { next: false, reason: 'end', complete: true, use: false }
      : { next: false, reason: 'repeated', complete: false, use: false };
  }
  const valid = records.filter((r) => r.valid);
  if (!newestFirst(valid, input.previousCreatedAt)) {
    return { next: false, reason: 'unordered', complete: false, use: true };
  }
  const caughtUp = { next: false, reason: 'caught-up', complete: true, use: true } as const;
  const { tieAt } = input;
  if (tieAt !== undefined && valid.some((r) => r.createdAt !== undefined && r.createdAt < tieAt)) {
    return caughtUp;
  }
  const size = input.size ?? input.pageSize;
  if (tieAt === undefined && valid.length > 0 && valid.every((r) => r.known)) {
    const last = valid[valid.length - 1]?.createdAt;
    if (last === undefined || input.page >= input.maxPages) return caughtUp;
    if (records.length >= size) return { next: true, tieAt: last };
    // A short page 1 may be a capping server's full page (rule 5): its ties may follow on page 2.
    if (input.page > 1 || input.size !== undefined) return caughtUp;
    return { next: true, size: records.length, tieAt: last };
  }
  if (records.length < size && input.linkNext !== true) {
    if (input.page > 1 || input.size !== undefined)
      return { next: false, reason: 'end', complete: true, use: true };
    if (input.page >= input.maxPages) return { next: false, reason: 'max-pages', complete: false, use: true };
    return { next: true, size: records.length };
  }
  if (input.page >= input.maxPages) return { next: false, reason: 'max-pages', complete: false, use: true };
  return { next: true };
}

/** True when the valid records' `createdAt` never increases, from `before` (the previous page's last) on. */
function newestFirst(valid: readonly PageRecord[], before: number | undefined): boolean {
  let last = before;
  for (const { createdAt } of valid) {
    if (createdAt === undefined) continue;
    if (last !== undefined && createdAt > last) return false;
    last = createdAt;
  }
  return true;
}

function sameIds(records: readonly PageRecord[], previous: readonly (string | undefined)[]): boolean {
  if (records.length !== previous.length || records.every((r) => r.id === undefined)) return false;
  // Position by position, an element without an id included (it repeats as such).
  return records.every((r, i) => r.id === previous[i]);
}

/**
 * The paging of the `recent` source as a pure state machine (no I/O): {@link request} names the next list
 * page, {@link onPage} takes what it held and says what follows ({@link decidePage}'s rules). The read loop
 * (recent-source.ts) fetches and feeds it; test/unit/recent-paging.test.ts drives this same class.
 */
export class RecentPager {
  /** 1-based number of the page to read next. */
  page = 1;
  readonly #pageSize: number;
  readonly #maxPages: number;
  #size: number | undefined; // a capped server's served size, once adopted
  #previousIds: (string | undefined)[] | undefined;
  #previousCreatedAt: number | undefined;
  #tieAt: number | undefined;
  /** The next page the last page named, and whether any page named one. */
  #next: URL | undefined;
  #linkSeen = false;
  readonly #visited = new Set<string>();

  /** `pageSize` asked for on every page (`REPORTS_RECENT_PAGE_SIZE`); `maxPages`: `REPORTS_RECENT_MAX_PAGES`. */
  constructor(pageSize: number, maxPages: number) {
    this.#pageSize = pageSize;
    this.#maxPages = maxPages;
  }

  /**
   * The next page to read: the 1-based `page` with `pageSize` to ask by number, and `url` when the page
   * before named its next page (that URL is asked as it is).
   */
  request(): { page: number; pageSize: number; url?: URL | undefined } {
    return { page: this.page, pageSize: this.#pageSize, url: this.#next };
  }

  /**
   * Takes the records of page {@link page}, read at `link.url`, and the next page it names (`link.next`), and
   * moves on to the next page when the run goes on. A run that would go on to a page already read (a link
   * loop) stops incomplete; a page the stop rules end the run at ends it as they say, whatever it links to.
   */
  onPage(records: readonly PageRecord[], link: { url?: URL; next?: URL | undefined } = {}): RecentStep {
    const { page } = this;
    if (link.url) this.#visited.add(link.url.href);
    const linkNext = link.next !== undefined;
    const decision = decidePage({
      linkNext,
      linkSeen: this.#linkSeen,
      page,
      pageSize: this.#pageSize,
      size: this.#size,
      maxPages: this.#maxPages,
      records,
      previousIds: this.#previousIds,
      previousCreatedAt: this.#previousCreatedAt,
      tieAt: this.#tieAt,
    });
    if (decision.next) {
      const loop = this.#linkLoop(link.next);
      if (loop) return loop;
      this.#size = decision.size ?? this.#size;
      this.#tieAt = decision.tieAt ?? this.#tieAt;
      this.#linkSeen ||= linkNext;
      this.#next = link.next;
      this.#previousIds = records.map((r) => r.id);
      for (const r of records)
        if (r.valid && r.createdAt !== undefined) this.#previousCreatedAt = r.createdAt;
      this.page++;
      return { use: true, logs: [] };
    }
    return stopStep(decision, page, this.#pageSize);
  }

  /** The stop of a page that would go on to a page already read (a link loop), else undefined. */
  #linkLoop(next: URL | undefined): RecentStep | undefined {
    if (!next || !this.#visited.has(next.href)) return undefined;
    const reason = `list page ${this.page} links back to a page already read (${next.href}): reports past it are left to the next full export`;
    const fields = { pages: this.page, stop: 'link-loop' };
    return {
      use: true,
      outcome: { complete: false, reason },
      logs: [{ level: 'warn', fields, message: reason }],
    };
  }
}
