import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decidePaging, MAX_GAP_PAGES } from '../../src/sync/sources/csv-paging.js';
import { CsvPager, type PageAnswer } from '../../src/sync/sources/csv-pager.js';
import { SyncError } from '../../src/util/errors.js';

// The paging rule over generated servers: a dataset of `total` rows served `served` rows per page (a cap
// when below `asked`), optionally with `Link rel=next`, with header-only pages slipped in between, and a
// /stats total that may be unknown, read by the CSV source's own pager (csv-pager.ts) without the HTTP.

interface Server {
  total: number;
  asked: number;
  served: number;
  links: boolean;
  /** Empty pages inserted before the data page of that 0-based index (rows are not lost, only shifted). */
  holesBefore: number[];
  /** An inserted empty page still links on (when the server sends links at all). */
  holeLinks: boolean;
  statsKnown: boolean;
}

interface Page {
  rows: number;
  link: boolean;
}

function pagesOf(s: Server): Page[] {
  const data: number[] = [];
  for (let left = s.total; left > 0; left -= s.served) data.push(Math.min(s.served, left));
  const pages: Page[] = [];
  data.forEach((rows, i) => {
    for (let h = 0; h < (s.holesBefore[i] ?? 0); h++) pages.push({ rows: 0, link: s.links && s.holeLinks });
    pages.push({ rows, link: s.links });
  });
  // The last page links nowhere.
  const last = pages.at(-1);
  if (last) last.link = false;
  return pages;
}

/** How a read through the pager ended: complete or not (with the pager's reason), as decidePaging names it. */
interface Ended {
  action: 'stop-complete' | 'stop-incomplete';
  reason?: string | undefined;
}

const pageUrl = (page: number) => new URL(`http://upstream.test/reports.csv?pageSize=n&page=${page}`);

/**
 * Pages through `s` with the CSV source's own pager (csv-pager.ts), answering each request it makes as the
 * server would, with `statsTotal` as /stats' total (default: the true total when the server has /stats);
 * throws when paging does not end soon after the last row.
 */
function read(
  s: Server,
  statsTotal = s.statsKnown ? s.total : undefined,
): { outcome: Ended; rowsSoFar: number; requests: number } {
  const pages = pagesOf(s);
  const pager = new CsvPager({
    pageSize: s.asked,
    maxPages: 10_000,
    pageParam: 'page',
    pageUrl,
    statsTotalAvailable: true,
  });
  for (let requests = 1; ; requests++) {
    const page = pager.page;
    const p = pages[page - 1] ?? { rows: 0, link: false };
    const answer: PageAnswer = {
      url: pager.url.toString(),
      rows: p.rows,
      keysDigest: p.rows > 0 ? `keys of page ${page}` : undefined,
      etag: '"v1"',
      // A `Link` names the next page by a URL of its own (not the numbered one).
      next: p.link ? new URL(`http://upstream.test/next/${page + 1}`) : undefined,
    };
    if (pager.checkValidator(answer).kind === 'probe') throw new Error('one validator throughout');
    pager.countRows(answer);
    let step = pager.decide(answer);
    if (step === 'stats-total') {
      pager.statsTotal = statsTotal;
      step = pager.decide(answer);
    }
    if (step === 'stats-total') throw new Error('the pager asked for the /stats total twice');
    const { outcome } = step;
    if (outcome) {
      const ended: Ended = outcome.complete
        ? { action: 'stop-complete' }
        : { action: 'stop-incomplete', reason: outcome.reason };
      return { outcome: ended, rowsSoFar: pager.rowsSoFar, requests };
    }
    // The pager follows a Link to the page after, else asks the next number.
    expect(pager.page).toBe(page + 1);
    if (pager.page > pages.length + 2 * MAX_GAP_PAGES + 4) throw new Error(`no end after ${page} pages`);
  }
}

const server = (holes: fc.Arbitrary<number[]>): fc.Arbitrary<Server> =>
  fc
    .record({
      total: fc.integer({ min: 0, max: 60 }),
      asked: fc.integer({ min: 1, max: 12 }),
      cap: fc.integer({ min: 1, max: 12 }),
      links: fc.boolean(),
      holesBefore: holes,
      holeLinks: fc.boolean(),
      statsKnown: fc.boolean(),
    })
    .map(({ cap, ...s }) => ({ ...s, served: Math.min(cap, s.asked) }));

describe('CSV paging (csv-pager.ts, csv-paging.ts)', () => {
  it('reads every row of a server without holes, capped or not, with or without links and /stats', () => {
    fc.assert(
      fc.property(server(fc.constant([])), (s) => {
        const { outcome, rowsSoFar } = read(s);
        expect(outcome.action).toBe('stop-complete');
        expect(rowsSoFar).toBe(s.total);
      }),
      { numRuns: 2000 },
    );
  });

  it('never calls an export complete while a known /stats total says rows are missing', () => {
    fc.assert(
      fc.property(
        server(fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 8 })),
        fc.integer({ min: -3, max: 3 }),
        (s, statsDrift) => {
          // Also a /stats total that is off from the export (stale or ahead of it).
          const statsTotal = Math.max(0, s.total + statsDrift);
          const { outcome, rowsSoFar } = read(s, statsTotal);
          if (outcome.action === 'stop-complete') {
            expect(rowsSoFar).toBeGreaterThanOrEqual(Math.min(statsTotal, s.total));
          } else {
            // Stopping incomplete is always safe; it only happens with rows really unread.
            expect(rowsSoFar).toBeLessThan(Math.max(statsTotal, s.total));
          }
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('reads past up to MAX_GAP_PAGES header-only pages in a row when /stats or a Link says there is more', () => {
    fc.assert(
      fc.property(server(fc.array(fc.integer({ min: 0, max: MAX_GAP_PAGES }), { maxLength: 8 })), (s) => {
        fc.pre(s.statsKnown || (s.links && s.holeLinks));
        const { outcome, rowsSoFar } = read(s);
        expect(outcome.action).toBe('stop-complete');
        expect(rowsSoFar).toBe(s.total);
      }),
      { numRuns: 2000 },
    );
  });

  it('a run of empty pages longer than MAX_GAP_PAGES before the /stats total stops incomplete, with numbers', () => {
    const { outcome, rowsSoFar } = read({
      total: 30,
      asked: 10,
      served: 10,
      links: false,
      holesBefore: [0, MAX_GAP_PAGES + 1],
      holeLinks: false,
      statsKnown: true,
    });
    expect(rowsSoFar).toBe(10);
    expect(outcome.action).toBe('stop-incomplete');
    expect(outcome.reason).toContain('/stats says 20 rows are still missing');
  });

  it('adopts the size a capping server serves (50 rows when 500 are asked)', () => {
    const d = decidePaging({
      page: 1,
      rows: 50,
      asked: 500,
      size: 500,
      linkNext: false,
      linkSeen: false,
      rowsSoFar: 50,
      gap: 0,
      statsTotal: 120,
    });
    expect(d).toMatchObject({ action: 'continue', via: 'number', size: 50 });
    expect(
      read({
        total: 120,
        asked: 500,
        served: 50,
        links: false,
        holesBefore: [],
        holeLinks: false,
        statsKnown: true,
      }),
    ).toMatchObject({ rowsSoFar: 120, requests: 3 });
  });
});

describe('CSV paging past the end of a server that links on from every page', () => {
  /**
   * Reads `total` rows served `size` a page, every page linking on; past the last row the server answers
   * `past`: header-only pages still linking on, or an error (404) to the page its last link promised.
   */
  function readLinkedOn(
    total: number,
    size: number,
    past: 'empty' | 'error',
    statsTotal: number | undefined,
  ) {
    const pager = new CsvPager({
      pageSize: size,
      maxPages: 10_000,
      pageParam: 'page',
      pageUrl,
      statsTotalAvailable: statsTotal !== undefined,
    });
    const pages = Math.ceil(total / size);
    for (let requests = 1; requests < pages + 20; requests++) {
      const page = pager.page;
      const rows = Math.max(0, Math.min(size, total - (page - 1) * size));
      let answer: PageAnswer = {
        url: pager.url.toString(),
        rows,
        keysDigest: rows > 0 ? `keys of page ${page}` : undefined,
        etag: '"v1"',
        next: new URL(`http://upstream.test/next/${page + 1}`),
      };
      if (page > pages && past === 'error') {
        const err = new SyncError('HTTP_STATUS', 'HTTP 404', { context: { status: 404 } });
        expect(pager.onFetchError(err, false, false)).toBe('past-end');
        answer = { url: answer.url, rows: 0, keysDigest: undefined, next: undefined, pastEnd: true };
      }
      pager.checkValidator(answer);
      pager.countRows(answer);
      let step = pager.decide(answer);
      if (step === 'stats-total') {
        pager.statsTotal = statsTotal;
        step = pager.decide(answer);
      }
      if (step === 'stats-total') throw new Error('asked twice');
      if (step.outcome) return { outcome: step.outcome, rowsSoFar: pager.rowsSoFar };
    }
    throw new Error('no end');
  }

  it('ends complete once /stats confirms every row was read, and never while it says rows are missing (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom('empty' as const, 'error' as const),
        fc.option(fc.integer({ min: -3, max: 3 }), { nil: undefined }),
        (total, size, past, drift) => {
          const statsTotal = drift === undefined ? undefined : Math.max(0, total + drift);
          const { outcome, rowsSoFar } = readLinkedOn(total, size, past, statsTotal);
          expect(rowsSoFar).toBe(total);
          // Complete exactly when /stats counts no more rows than were read.
          expect(outcome.complete).toBe(statsTotal !== undefined && statsTotal <= total);
        },
      ),
      { numRuns: 1500 },
    );
  });
});

describe('CSV paging by Link whose links run out before /stats is reached', () => {
  it('a page asked by number that repeats an earlier page is no new page: stopped incomplete, not staged', () => {
    // Pages by cursor links; asked by number past its last link, the server answers its first page.
    const pager = new CsvPager({
      pageSize: 10,
      maxPages: 100,
      pageParam: 'page',
      pageUrl,
      statsTotalAvailable: true,
    });
    const pages = 3;
    for (let i = 0; i < 10; i++) {
      const page = pager.page;
      const served = page <= pages ? page : 1;
      const answer: PageAnswer = {
        url: pager.url.toString(),
        rows: served === pages ? 4 : 10,
        keysDigest: `keys of page ${served}`,
        etag: '"v1"',
        next: page < pages ? new URL(`http://upstream.test/?cursor=c${page}`) : undefined,
      };
      pager.checkValidator(answer);
      pager.countRows(answer);
      let step = pager.decide(answer);
      if (step === 'stats-total') {
        pager.statsTotal = 30; // counts more reports than the export holds
        step = pager.decide(answer);
      }
      if (step === 'stats-total') throw new Error('asked twice');
      if (step.outcome) {
        expect(step.block).toBe(false);
        expect(step.outcome).toMatchObject({
          complete: false,
          reason: expect.stringContaining('repeats the keys of page 1'),
        });
        expect(pager.rowsSoFar).toBe(24);
        return;
      }
    }
    throw new Error('no end');
  });
});

describe('CsvPager: what stops an export incomplete or makes it read again', () => {
  const answer = (page: number, extra: Partial<PageAnswer> = {}): PageAnswer => ({
    url: pageUrl(page).toString(),
    rows: 10,
    keysDigest: `keys of page ${page}`,
    etag: '"v1"',
    next: undefined,
    ...extra,
  });
  const init = { pageSize: 10, maxPages: 100, pageParam: 'page', pageUrl, statsTotalAvailable: false };
  /** Feeds one answer through the pager as csv-source.ts does (no /stats); the step it gives. */
  function feed(pager: CsvPager, a: PageAnswer) {
    const v = pager.checkValidator(a);
    pager.countRows(a);
    const step = pager.decide(a);
    if (step === 'stats-total') throw new Error('no /stats here');
    return { validator: v, step };
  }

  it('a page repeating the keys of the one before (the page parameter ignored) stops incomplete, unmerged', () => {
    const pager = new CsvPager(init);
    feed(pager, answer(1, { keysDigest: 'same' }));
    const { step } = feed(pager, answer(2, { keysDigest: 'same' }));
    expect(step.block).toBe(false);
    expect(step.outcome).toMatchObject({
      complete: false,
      reason: expect.stringContaining('repeats the keys'),
    });
  });

  it('page 2 repeating a page 1 longer than pageSize (a static file): the whole export when /stats confirms it', () => {
    for (const [statsTotal, complete] of [
      [25, true],
      [24, true],
      [30, false],
      [undefined, false],
    ] as const) {
      const pager = new CsvPager({ ...init, statsTotalAvailable: statsTotal !== undefined });
      const whole = answer(1, { rows: 25, keysDigest: 'all' });
      feed(pager, whole);
      const again = { ...whole, url: pageUrl(2).toString() };
      pager.checkValidator(again);
      pager.countRows(again);
      let step = pager.decide(again);
      if (step === 'stats-total') {
        pager.statsTotal = statsTotal;
        step = pager.decide(again);
      }
      if (step === 'stats-total') throw new Error('asked twice');
      expect(step.block).toBe(false);
      expect(step.outcome?.complete).toBe(complete);
      if (!complete)
        expect(step.outcome).toMatchObject({ reason: expect.stringContaining('ignores pageSize') });
      expect(pager.rowsSoFar).toBe(25);
    }
  });

  it('a Link back to a page already read stops incomplete, keeping the page', () => {
    const pager = new CsvPager(init);
    feed(pager, answer(1, { next: pageUrl(2) }));
    const { step } = feed(pager, answer(2, { next: pageUrl(1) }));
    expect(step.start).toBeUndefined();
    expect(step).toMatchObject({
      block: true,
      checkpoint: {},
      outcome: { complete: false, reason: expect.stringContaining('the links loop') },
    });
  });

  it('a changed validator asks page 1 again: changed there too is EXPORT_CHANGED, unchanged is per-page validators', () => {
    const changed = new CsvPager(init);
    feed(changed, answer(1, { next: pageUrl(2) }));
    const a2 = answer(2, { etag: '"v2"' });
    expect(changed.checkValidator(a2)).toEqual({ kind: 'probe' });
    expect(() => changed.afterProbe(a2, { etag: '"v2"' })).toThrow(/changed while it was read/);

    const perPage = new CsvPager(init);
    feed(perPage, answer(1, { next: pageUrl(2) }));
    expect(perPage.checkValidator(a2)).toEqual({ kind: 'probe' });
    // Page 1 kept its validator: none is recorded for the export (a 304 to page 1 would hide later pages).
    expect(perPage.afterProbe(a2, { etag: '"v1"' })).toEqual({
      kind: 'export',
      info: { url: pageUrl(1).toString() },
    });
    perPage.countRows(a2);
    const end = perPage.decide({ ...a2, rows: 3 });
    if (end === 'stats-total') throw new Error('no /stats here');
    expect(end.outcome).toMatchObject({
      complete: true,
      tombstonesBlocked: expect.stringContaining('validates each page'),
    });
  });

  it('a validator changed again on a later attempt (made per answer, or an export regenerated faster than read) reads on, inferring no deletes', () => {
    const again = new CsvPager({ ...init, validatorUnstable: true });
    feed(again, answer(1, { next: pageUrl(2) }));
    const a2 = answer(2, { etag: '"v2"' });
    expect(again.checkValidator(a2)).toEqual({ kind: 'probe' });
    expect(again.afterProbe(a2, { etag: '"v3"' })).toEqual({
      kind: 'export',
      info: { url: pageUrl(1).toString() },
    });
    again.countRows(a2);
    const end = again.decide({ ...a2, rows: 3 });
    if (end === 'stats-total') throw new Error('no /stats here');
    expect(end.outcome).toMatchObject({
      complete: true,
      tombstonesBlocked: expect.stringContaining('changed again'),
    });
  });

  it('an error answer past page 1 is the end only when /stats confirms it; rows after one mean a page is missing', () => {
    const pastEnd = (page: number) =>
      answer(page, { rows: 0, keysDigest: undefined, pastEnd: true, etag: undefined });
    const unconfirmed = new CsvPager(init);
    feed(unconfirmed, answer(1));
    expect(unconfirmed.onFetchError(new Error('reset'), false, false)).toBe('fail');
    expect(feed(unconfirmed, pastEnd(2)).step.outcome).toMatchObject({
      complete: false,
      reason: expect.stringContaining('/stats does not confirm the end'),
    });

    const gap = new CsvPager({ ...init, statsTotalAvailable: true });
    const withStats = (a: PageAnswer) => {
      gap.checkValidator(a);
      gap.countRows(a);
      let step = gap.decide(a);
      if (step === 'stats-total') {
        gap.statsTotal = 20;
        step = gap.decide(a);
      }
      if (step === 'stats-total') throw new Error('asked twice');
      return step;
    };
    withStats(answer(1));
    expect(withStats(pastEnd(2)).outcome).toBeUndefined(); // /stats: 10 rows still to come
    withStats(answer(3));
    expect(withStats(answer(4, { rows: 0, keysDigest: undefined })).outcome).toMatchObject({
      complete: false,
      reason:
        'page 2 answered an error (or no content), yet page 3 has rows: a page of the export is missing',
    });
  });
});

describe('CSV paging of a server that answers a page past its end with its last page (a clamp)', () => {
  /**
   * Reads `total` rows served `size` a page; a page past the last answers the last page again (its keys
   * too). Links: none, `more` (while rows follow) or `every` page. Returns the outcome, rows and requests.
   */
  function readClamped(total: number, size: number, links: 'none' | 'more' | 'every', statsTotal?: number) {
    const pager = new CsvPager({
      pageSize: size,
      maxPages: 10_000,
      pageParam: 'page',
      pageUrl,
      statsTotalAvailable: statsTotal !== undefined,
    });
    const pages = Math.ceil(total / size);
    for (let requests = 1; requests < pages + 20; requests++) {
      const served = Math.min(pager.page, Math.max(pages, 1));
      const rows = Math.max(0, Math.min(size, total - (served - 1) * size));
      const linked = links === 'every' || (links === 'more' && served < pages);
      const answer: PageAnswer = {
        url: pager.url.toString(),
        rows,
        keysDigest: rows > 0 ? `keys of page ${served}` : undefined,
        etag: '"v1"',
        next: linked ? new URL(`http://upstream.test/next/${pager.page + 1}`) : undefined,
      };
      pager.checkValidator(answer);
      pager.countRows(answer);
      let step = pager.decide(answer);
      if (step === 'stats-total') {
        pager.statsTotal = statsTotal;
        step = pager.decide(answer);
      }
      if (step === 'stats-total') throw new Error('asked twice');
      if (step.outcome) return { outcome: step.outcome, rowsSoFar: pager.rowsSoFar, requests, step };
    }
    throw new Error('no end');
  }

  it('ends complete at the repeated page once paging worked, reading every row once; a repeated page 1 is still the page parameter ignored (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom('none' as const, 'more' as const, 'every' as const),
        fc.boolean(),
        (total, size, links, statsKnown) => {
          const { outcome, rowsSoFar, requests, step } = readClamped(
            total,
            size,
            links,
            statsKnown ? total : undefined,
          );
          const pages = Math.ceil(total / size);
          // A repeated page (a request past the last page) is never staged, nor counted.
          if (requests > pages) expect(step.block).toBe(false);
          expect(rowsSoFar).toBe(total);
          expect(requests).toBeLessThanOrEqual(pages + 1);
          if (total === size || (total < size && (!statsKnown || links === 'every'))) {
            // Page 2 repeats page 1: paging never showed it works.
            expect(outcome).toMatchObject({
              complete: false,
              reason: expect.stringContaining(
                'page 2 repeats the keys of page 1: the server ignores the `page`',
              ),
            });
          } else {
            expect(outcome.complete).toBe(true);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('a /stats total off from the export does not change where it ends: the tombstone guards compare the counts', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 6 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: -3, max: 3 }),
        (pages, size, drift) => {
          const total = pages * size;
          const { outcome, rowsSoFar, requests } = readClamped(total, size, 'none', total + drift);
          expect(outcome.complete).toBe(true);
          expect(rowsSoFar).toBe(total);
          expect(requests).toBe(pages + 1);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('says why it ended: the clamp at info, with the pages named', () => {
    const { outcome, step } = readClamped(25, 5, 'none', 25);
    expect(outcome).toEqual({ complete: true, tombstonesBlocked: undefined });
    expect(step.logs).toEqual([
      expect.objectContaining({
        level: 'info',
        message:
          'page 6 repeats the keys of page 5: the server answers a page past its last with its last page; end of the export',
      }),
    ]);
  });
});
