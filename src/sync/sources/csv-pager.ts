import { SyncError } from '../../util/errors.js';
import { safeUrl } from '../../util/safe-url.js';
import type { ExportValidator, ReadContext, ReadOutcome } from '../export-source.js';
import { decidePaging, isPastEndAnswer, mayBeEnd, repeatedPage } from './csv-paging.js';
import { resumedPageSize } from './csv-resume.js';
import { PageValidators, type PageAnswer, type ValidatorStep } from './csv-page-validators.js';

/** What the pager needs to know of the configuration: the paging settings, and how a page is named. */
export interface CsvPagerInit {
  /** `pageSize` asked for (`REPORTS_CSV_PAGE_SIZE`). */
  pageSize: number;
  /** Pages a run may read (`REPORTS_CSV_MAX_PAGES`). */
  maxPages: number;
  /** Name of the page parameter (`REPORTS_CSV_PAGE_PARAM`), for messages. */
  pageParam: string;
  /** URL of page `n` by number (csvPageUrl of csv-pages.ts). */
  pageUrl: (page: number) => URL;
  /** The upstream's `/stats` total can be asked (ReadContext.upstreamTotal is set). */
  statsTotalAvailable: boolean;
  /** Where an interrupted run stopped (ReadContext.resumeFrom). */
  resume?: ReadContext['resumeFrom'];
  /** An earlier attempt found the export changed (ReadContext.validatorUnstable): a change again reads on. */
  validatorUnstable?: boolean | undefined;
}

export type { PageAnswer, ValidatorStep } from './csv-page-validators.js';

/** A log line the read loop writes. */
export interface PagerLog {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

/**
 * What follows a page, in the order the read loop acts on it: start fetching `start` ahead, hand the
 * page's block on (`block`), write a checkpoint, then end with `outcome` or read page {@link CsvPager.page}.
 */
export interface PageStep {
  start?: URL | undefined;
  block: boolean;
  checkpoint?: { nextUrl?: string | undefined } | undefined;
  outcome?: ReadOutcome | undefined;
  logs: PagerLog[];
}

/**
 * The paging of the CSV export as a pure state machine (no I/O): a page's answer in, the next request or
 * the end out, as the Singer SDK's paginators are. The read loop (csv-source.ts) fetches what it says and
 * feeds back what came; test/unit/csv-paging.test.ts drives this same class over generated servers.
 *
 * The rules (docs/sources.md, docs/guarantees.md "Deletes and completeness"): the next page is the `Link:
 * rel="next"` target when there is one, else page P+1; where a short page ends the export is
 * {@link decidePaging}'s; a page repeating the previous one after paging worked ends the export (a server
 * clamping the page number, {@link repeatedPage}); any other page repeating the keys of a page read, a
 * `Link` back to a page read, rows after a page answered with an error, and an error answer /stats does
 * not confirm as the end stop the run incomplete; every page must carry page 1's validator, else the export changed (`EXPORT_CHANGED`) unless
 * page 1 kept its own (a server validating each page: the run completes without tombstones).
 */
export class CsvPager {
  /** 1-based number of the page to read next. */
  page: number;
  /** URL of the page to read next. */
  url: URL;
  /** The page size in force (the asked size, or a capping server's). */
  size: number;
  /** Data rows read so far, resumed ones included. */
  rowsSoFar: number;
  /** The `/stats` total, once asked. */
  statsTotal: number | undefined;
  readonly #init: CsvPagerInit;
  readonly #validators: PageValidators;
  /** Digest of the keys of each page staged so far → its page number (a page repeating one is no new page). */
  readonly #pageKeys = new Map<string, number>();
  #linkSeen = false;
  /** A page read was full (as many rows as the page size in force): a repeat of it may be a clamp. */
  #fullSeen = false;
  #pastEndAt: number | undefined;
  #missing: string | undefined;
  #gap = 0;
  #statsAsked = false;
  readonly #visited = new Set<string>();

  constructor(init: CsvPagerInit) {
    const resume = init.resume;
    this.#init = init;
    this.page = resume ? resume.page + 1 : 1;
    this.url = resume?.nextUrl ? new URL(resume.nextUrl) : init.pageUrl(this.page);
    this.size = resume ? resumedPageSize(init.pageSize, resume) : init.pageSize;
    this.rowsSoFar = resume?.rowsRead ?? 0;
    this.#validators = new PageValidators(init.pageUrl(1), init.validatorUnstable === true, resume);
  }

  /** The validator a resumed run starts from (recorded before the first page), else undefined. */
  get resumedValidator(): ExportValidator | undefined {
    return this.#init.resume ? this.#validators.first : undefined;
  }

  /**
   * How a failed fetch of the current page reads: `past-end` (an error answer to a page asked for by number or link
   * past page 1: an empty page), `not-modified` (page 1 answered 304 to the conditional request: the whole
   * export is the one last read), or `fail`.
   */
  onFetchError(
    err: unknown,
    conditional: boolean,
    notModified: boolean,
  ): 'past-end' | 'not-modified' | 'fail' {
    if (this.page > 1 && isPastEndAnswer(err)) return 'past-end';
    return this.page === 1 && conditional && notModified ? 'not-modified' : 'fail';
  }

  /** Checks the page's validator against page 1's: {@link ValidatorStep}. */
  checkValidator(answer: PageAnswer): ValidatorStep {
    this.#visited.add(this.url.toString());
    return this.#validators.check(answer, this.page);
  }

  /** After a `probe`: page 1's validator now (see {@link PageValidators.afterProbe}). */
  afterProbe(answer: PageAnswer, firstNow: ExportValidator): ValidatorStep {
    return this.#validators.afterProbe(answer, firstNow, this.page);
  }

  /** Notes what the page's answer says of the export as a whole: call once per page, after {@link checkValidator}. */
  countRows(answer: PageAnswer): void {
    const { rows } = answer;
    if (answer.pastEnd) this.#pastEndAt ??= this.page;
    else if (rows > 0 && this.#pastEndAt !== undefined) {
      this.#missing ??= `page ${this.#pastEndAt} answered an error (or no content), yet page ${this.page} has rows: a page of the export is missing`;
    }
    // A page fuller than the size adopted from a short first page: that page was short, not the server's cap.
    if (this.size < this.#init.pageSize && rows > this.size) {
      this.#missing ??=
        `page ${this.page} has ${rows} rows, more than the ${this.size} adopted as the server's page size from the ` +
        'first page: that page came back short, and rows of it may never have been read';
    }
    this.#validators.noteUnvalidated(answer, this.page);
  }

  /**
   * Decides what follows the page (see the class comment) and moves to the next page when there is one.
   * `stats-total` asks the loop for the upstream's `/stats` total first ({@link statsTotal}; undefined when
   * it cannot be had), then to ask again: a page that may be the end is judged with it.
   *
   * @throws SyncError `CSV_MAX_PAGES` when a page past `REPORTS_CSV_MAX_PAGES` still has rows
   */
  decide(answer: PageAnswer): PageStep | 'stats-total' {
    const early = this.#guards(answer);
    if (early) return early;
    if (this.#wantsStatsTotal(answer)) return 'stats-total';
    this.rowsSoFar += answer.rows;
    return this.#follow(answer);
  }

  /** The page may be the end and `/stats` can be and was not asked yet: its total decides. */
  #wantsStatsTotal(answer: PageAnswer): boolean {
    if (!this.#init.statsTotalAvailable || this.#statsAsked || this.statsTotal !== undefined) return false;
    const facts = { rows: answer.rows, size: this.size, linkNext: answer.next !== undefined };
    if (!mayBeEnd({ ...facts, linkSeen: this.#linkSeen })) return false;
    this.#statsAsked = true;
    return true;
  }

  /** The stops that come before the paging rule: too many pages, a repeated page. */
  #guards(answer: PageAnswer): PageStep | 'stats-total' | undefined {
    const { page } = this;
    const { rows } = answer;
    const { maxPages, pageSize } = this.#init;
    if (page > maxPages) {
      if (rows === 0) return stop(false, `page ${page} is past REPORTS_CSV_MAX_PAGES=${maxPages} and empty`);
      throw new SyncError(
        'CSV_MAX_PAGES',
        `The CSV export at ${answer.url} still has rows on page ${page}, past REPORTS_CSV_MAX_PAGES=${maxPages}: ` +
          'raise the limit or REPORTS_CSV_PAGE_SIZE if the export is really that large; otherwise the server pages in a loop',
        { context: { url: answer.url, maxPages, pageSize } },
      );
    }
    const repeated = answer.keysDigest === undefined ? undefined : this.#pageKeys.get(answer.keysDigest);
    if (rows > 0 && repeated !== undefined) {
      if (page === 2 && this.rowsSoFar > pageSize) return this.#wholeInOnePage(answer);
      return this.#repeated(answer, repeated);
    }
    return undefined;
  }

  /** A page repeating the keys of page `repeated`: the end of the export or an incomplete stop ({@link repeatedPage}). */
  #repeated(answer: PageAnswer, repeated: number): PageStep {
    const { page, rowsSoFar, statsTotal } = this;
    const ignored = `the \`${this.#init.pageParam}\` parameter (REPORTS_CSV_PAGE_PARAM?)`;
    const seen = repeatedPage({ page, repeated, fullBefore: this.#fullSeen, url: answer.url, ignored });
    if (!seen.complete)
      return { ...stop(false, seen.reason), logs: [warn({ page, url: answer.url }, seen.reason)] };
    const logs: PagerLog[] = [
      { level: 'info', fields: { page, url: answer.url, rowsSoFar, statsTotal }, message: seen.reason },
    ];
    // A page known missing earlier still leaves the export incomplete.
    const end = this.#missing === undefined ? undefined : stop(false, this.#missing);
    if (end) return { ...end, logs: [...logs, ...end.logs] };
    return {
      block: false,
      outcome: { complete: true, tombstonesBlocked: this.#validators.consistency },
      logs,
    };
  }

  /**
   * Page 2 repeats a page 1 that held more rows than `pageSize` asked: the server ignores both `pageSize` and
   * the page (a static file behind the export's redirect, say), so page 1 may be the whole export. It is,
   * when the `/stats` total confirms it (asked first); else the read stops incomplete, saying so.
   */
  #wholeInOnePage(answer: PageAnswer): PageStep | 'stats-total' {
    if (this.#init.statsTotalAvailable && !this.#statsAsked && this.statsTotal === undefined) {
      this.#statsAsked = true;
      return 'stats-total';
    }
    const { rowsSoFar, statsTotal } = this;
    const numbers = `page 1 held ${rowsSoFar} rows where pageSize ${this.#init.pageSize} was asked, and page 2 repeats it`;
    if (statsTotal !== undefined && rowsSoFar >= statsTotal) {
      return {
        block: false,
        outcome: { complete: true, tombstonesBlocked: this.#validators.consistency },
        logs: [
          {
            level: 'info',
            fields: { url: answer.url, rowsSoFar, statsTotal },
            message: `${numbers}: the server serves the whole export in one answer, as /stats confirms`,
          },
        ],
      };
    }
    return stop(
      false,
      `${numbers}: the server ignores pageSize and \`${this.#init.pageParam}\`, and /stats ` +
        `(${statsTotal ?? 'unknown'}) does not confirm page 1 was the whole export`,
    );
  }

  /** The paging rule (decidePaging) applied to the page, and the move to the next one. */
  #follow(answer: PageAnswer): PageStep {
    const { page, rowsSoFar, statsTotal } = this;
    const { rows, next: link } = answer;
    const facts = { page, rows, asked: this.#init.pageSize, size: this.size, linkNext: link !== undefined };
    const decision = decidePaging({
      ...facts,
      linkSeen: this.#linkSeen,
      rowsSoFar,
      gap: this.#gap,
      statsTotal,
    });
    this.#linkSeen ||= link !== undefined;
    const block = rows > 0;
    if (answer.pastEnd && decision.action === 'stop-complete' && !(rowsSoFar >= (statsTotal ?? Infinity))) {
      return stop(
        false,
        `page ${page} answered an error (or no content), not an empty page, and /stats does not confirm the end`,
      );
    }
    if (decision.action === 'stop-incomplete') {
      // A page known missing is the first cause: the short pages after it follow from it.
      const reason = this.#missing ?? decision.reason;
      return { ...stop(false, reason), block, checkpoint: block ? {} : undefined };
    }
    const logs: PagerLog[] = [];
    let next: URL | undefined;
    if (decision.action === 'continue') {
      next = decision.via === 'link' && link !== undefined ? link : this.#init.pageUrl(page + 1);
      if (decision.reason)
        logs.push(warn({ page, rows, pageSize: this.size, rowsSoFar, statsTotal }, decision.reason));
      this.size = decision.size;
      this.#gap = decision.gap;
      this.#fullSeen ||= rows > 0 && rows >= this.size;
    }
    if (next !== undefined && this.#visited.has(next.toString())) {
      const loop = stop(
        false,
        `the Link of page ${page} leads back to ${safeUrl(next)}, read before: the links loop`,
      );
      return { ...loop, block, checkpoint: block ? {} : undefined, logs: [...logs, ...loop.logs] };
    }
    const checkpoint = block || next !== undefined ? { nextUrl: next?.toString() } : undefined;
    if (next === undefined) {
      logs.push({
        level: 'info',
        fields: { page, rows, pageSize: this.size, rowsSoFar, statsTotal },
        message: decision.reason ?? '',
      });
      const end = this.#missing !== undefined ? stop(false, this.#missing) : undefined;
      const outcome = end?.outcome ?? { complete: true, tombstonesBlocked: this.#validators.consistency };
      return { block, checkpoint, outcome, logs: [...logs, ...(end?.logs ?? [])] };
    }
    if (block && answer.keysDigest !== undefined && !this.#pageKeys.has(answer.keysDigest))
      this.#pageKeys.set(answer.keysDigest, page);
    this.url = next;
    this.page++;
    return { start: next, block, checkpoint, logs };
  }
}

/** An incomplete end, with the warning that carries the reason (no tombstones follow). */
function stop(complete: false, reason: string): PageStep {
  return {
    block: false,
    outcome: { complete, reason },
    logs: [warn({ reason }, 'the CSV export stopped incomplete: no tombstones')],
  };
}

function warn(fields: Record<string, unknown>, message: string): PagerLog {
  return { level: 'warn', fields, message };
}
