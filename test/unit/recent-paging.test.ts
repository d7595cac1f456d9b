import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decidePage, RecentPager, type PageRecord } from '../../src/sync/sources/recent-paging.js';

/**
 * A simulated list, newest first: `fresh` reports the warehouse does not hold (or holds changed), then
 * `known` reports it holds unchanged. Page `k` is rows `(k-1)·size … k·size-1`.
 */
function page(list: PageRecord[], k: number, size: number): PageRecord[] {
  return list.slice((k - 1) * size, k * size);
}

/**
 * Reads `list` with the `recent` source's own pager (recent-paging.ts), from a server serving at most `cap`
 * rows a page (default: as asked): the pages it asks for, and how the run ends.
 */
function readAll(list: PageRecord[], size: number, maxPages: number, cap = size) {
  const pager = new RecentPager(size, maxPages);
  for (;;) {
    const { page: k, pageSize } = pager.request();
    expect(pageSize).toBe(size);
    const step = pager.onPage(page(list, k, Math.min(pageSize, cap)));
    if (step.outcome) {
      const reason = step.outcome.complete ? undefined : step.outcome.reason;
      return { pages: k, complete: step.outcome.complete, reason, use: step.use };
    }
    expect(step.use).toBe(true);
    expect(pager.request().page).toBe(k + 1);
  }
}

const record = (id: string, known: boolean): PageRecord => ({ id, valid: true, known });

describe("the recent source's pager and its stop rules (recent-paging.ts)", () => {
  it('reads ceil(new / pageSize) + 1 pages when older reports are all known, never more than maxPages', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 40 }),
        (fresh, known, size, maxPages) => {
          const list = [
            ...Array.from({ length: fresh }, (_, i) => record(`n${i}`, false)),
            ...Array.from({ length: known }, (_, i) => record(`k${i}`, true)),
          ];
          const r = readAll(list, size, maxPages);
          // Without a limit: the first page that is empty, short, or all known (what the issue states as
          // ceil(new / pageSize) + 1 when a full page of known reports follows the new ones).
          let wanted = 1;
          for (; ; wanted++) {
            const p = page(list, wanted, size);
            if (p.length < size || p.every((x) => x.known)) break;
          }
          // A short first page that is not caught up may be a server's cap: page 2 is read to tell.
          const p1 = page(list, 1, size);
          if (wanted === 1 && p1.length > 0 && p1.length < size && !p1.every((x) => x.known)) wanted = 2;
          if (known >= size) expect(wanted).toBe(Math.ceil(fresh / size) + 1);
          expect(r.pages).toBe(Math.min(wanted, maxPages));
          if (wanted > maxPages)
            expect(r).toMatchObject({
              reason: expect.stringContaining('REPORTS_RECENT_MAX_PAGES'),
              complete: false,
            });
          else expect(r.complete).toBe(true);
          // Every new report was on a page read while the limit allowed it.
          if (r.complete) expect(r.pages * size).toBeGreaterThanOrEqual(Math.min(fresh, list.length));
        },
      ),
    );
  });

  it('a server capping pageSize loses no new report: its served size is adopted from page 2 on', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 2, max: 50 }),
        fc.integer({ min: 1, max: 49 }),
        (fresh, known, size, cap) => {
          fc.pre(cap < size);
          const list = [
            ...Array.from({ length: fresh }, (_, i) => record(`n${i}`, false)),
            ...Array.from({ length: known }, (_, i) => record(`k${i}`, true)),
          ];
          const r = readAll(list, size, 10_000, cap);
          expect(r.complete).toBe(true);
          expect(r.pages * cap).toBeGreaterThanOrEqual(Math.min(fresh, list.length));
        },
      ),
    );
  });

  it('a short page 1 read again (the server ignores `page`) is the whole list: the end, complete', () => {
    const p1 = [record('a', false), record('b', false)];
    const d = decidePage({ page: 2, pageSize: 5, maxPages: 9, records: p1, previousIds: ['a', 'b'] });
    expect(d).toEqual({ next: false, reason: 'end', complete: true, use: false });
  });

  it('a page 1 longer than pageSize read again (the server ignores paging: Open311 sends its whole list) is the whole list', () => {
    const p1 = ['a', 'b', 'c', 'd'].map((id) => record(id, false));
    const d = decidePage({
      page: 2,
      pageSize: 3,
      maxPages: 9,
      records: p1,
      previousIds: ['a', 'b', 'c', 'd'],
    });
    expect(d).toEqual({ next: false, reason: 'end', complete: true, use: false });
  });

  it('a page with the previous page ids in order is a repeat: incomplete, its records dropped', () => {
    const p1 = [record('a', false), record('b', false)];
    const d = decidePage({ page: 2, pageSize: 2, maxPages: 9, records: p1, previousIds: ['a', 'b'] });
    expect(d).toEqual({ next: false, reason: 'repeated', complete: false, use: false });
  });

  it('a shifted window (partial overlap with the previous page) is read on', () => {
    const p2 = [record('b', false), record('c', false)];
    expect(decidePage({ page: 2, pageSize: 2, maxPages: 9, records: p2, previousIds: ['a', 'b'] })).toEqual({
      next: true,
    });
  });

  it('invalid records neither stop the run nor keep it going', () => {
    const bad: PageRecord = { id: 'x', valid: false, known: false };
    expect(
      decidePage({ page: 1, pageSize: 2, maxPages: 9, records: [bad, record('k', true)] }),
    ).toMatchObject({
      reason: 'caught-up',
    });
    expect(decidePage({ page: 1, pageSize: 2, maxPages: 9, records: [bad, bad] })).toEqual({ next: true });
  });

  it('reads every report created at the instant it caught up: ties across a page boundary are not lost, on a capping server too (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 })), // often none: the batch leads the list
        fc.array(fc.boolean(), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 1, max: 12 }),
        fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
        (newer, batch, older, size, capAt) => {
          // A server may cap `pageSize` below what was asked: `capAt` rows a page.
          const served = Math.min(size, capAt ?? size);
          // Newest first, ties by id: reports newer than the batch (new), a batch created at one instant
          // of which a part was synced before (`batch[i]` known), then older reports (all known).
          const at = (t: number, id: string, known: boolean) => ({ id, valid: true, known, createdAt: t });
          const pad = (i: number) => String(i).padStart(3, '0');
          const list = [
            ...Array.from({ length: newer }, (_, i) => at(3000 - i, `n${pad(i)}`, false)),
            ...batch.map((known, i) => at(2000, `b${pad(i)}`, known)),
            ...Array.from({ length: older }, (_, i) => at(1000 - i, `o${pad(i)}`, true)),
          ];
          const r = readAll(list, size, 10_000, served);
          expect(r.complete).toBe(true);
          const last = list.reduce((end, x, i) => (x.known ? end : i), -1);
          expect(r.pages * served).toBeGreaterThan(last);
        },
      ),
    );
  });

  it('a list that is not newest first ends the run incomplete at the page that shows it, the page used', () => {
    const asc = [1, 2, 3, 4].map((t) => ({ id: `a${t}`, valid: true, known: t < 3, createdAt: t }));
    expect(readAll(asc, 2, 9)).toMatchObject({
      pages: 1,
      complete: false,
      use: true,
      reason: expect.stringMatching(/not ordered newest first by createdAt/),
    });
    // Across pages too: page 2 begins with a report newer than page 1's last.
    const desc = [4, 3, 5, 1].map((t) => ({ id: `d${t}`, valid: true, known: false, createdAt: t }));
    expect(readAll(desc, 2, 9)).toMatchObject({ pages: 2, complete: false });
  });

  it('a list naming its next page is read by its links: a short page linking on is not the last, a page naming none is', () => {
    const fresh = (id: string) => ({ id, valid: true, known: false });
    const pager = new RecentPager(3, 9);
    const u = (q: string) => new URL(`http://x/r?${q}`);
    expect(
      pager.onPage([fresh('a'), fresh('b')], { url: u('page=1'), next: u('c=2') }).outcome,
    ).toBeUndefined();
    expect(pager.request().url?.href).toBe('http://x/r?c=2');
    expect(pager.onPage([fresh('c')], { url: u('c=2'), next: u('c=3') }).outcome).toBeUndefined();
    // A full page that names no next page ends a linked list.
    const last = pager.onPage([fresh('d'), fresh('e'), fresh('f')], { url: u('c=3') });
    expect(last.outcome).toEqual({ complete: true });
  });

  it('an empty page that names its next page is not the end: the link is followed, up to maxPages', () => {
    const u = (q: string) => new URL(`http://x/r?${q}`);
    const fresh = (id: string) => ({ id, valid: true, known: false });
    const pager = new RecentPager(2, 4);
    expect(
      pager.onPage([fresh('a'), fresh('b')], { url: u('page=1'), next: u('c=2') }).outcome,
    ).toBeUndefined();
    expect(pager.onPage([], { url: u('c=2'), next: u('c=3') }).outcome).toBeUndefined();
    expect(pager.request().url?.href).toBe('http://x/r?c=3');
    expect(pager.onPage([fresh('c')], { url: u('c=3'), next: u('c=4') }).outcome).toBeUndefined();
    // Page maxPages, empty but linking on: the run stops there, incomplete (reports may follow).
    const last = pager.onPage([], { url: u('c=4'), next: u('c=5') });
    expect(last.outcome).toMatchObject({ complete: false });
    // An empty page naming no next page still ends the list.
    const plain = new RecentPager(2, 9);
    expect(
      plain.onPage([fresh('a'), fresh('b')], { url: u('page=1'), next: u('c=2') }).outcome,
    ).toBeUndefined();
    expect(plain.onPage([], { url: u('c=2') }).outcome).toEqual({ complete: true });
  });

  it('a link to a page already read stops the run incomplete, the page used', () => {
    const pager = new RecentPager(2, 9);
    const u = (q: string) => new URL(`http://x/r?${q}`);
    const rec = (id: string) => ({ id, valid: true, known: false });
    expect(pager.onPage([rec('a'), rec('b')], { url: u('page=1'), next: u('c=2') }).outcome).toBeUndefined();
    const step = pager.onPage([rec('c'), rec('d')], { url: u('c=2'), next: u('page=1') });
    expect(step.use).toBe(true);
    expect(step.outcome).toMatchObject({ complete: false, reason: expect.stringMatching(/links back/) });
  });

  it('a page the stop rules end the run at ends it complete, whatever it links to', () => {
    const pager = new RecentPager(2, 9);
    const u = (q: string) => new URL(`http://x/r?${q}`);
    const rec = (id: string, known: boolean) => ({ id, valid: true, known });
    expect(
      pager.onPage([rec('a', false), rec('b', false)], { url: u('page=1'), next: u('c=2') }).outcome,
    ).toBeUndefined();
    // Every report of page 2 is known: the run has caught up, so the link back to page 1 does not matter.
    const step = pager.onPage([rec('c', true), rec('d', true)], { url: u('c=2'), next: u('page=1') });
    expect(step.outcome).toEqual({ complete: true });
  });
});
