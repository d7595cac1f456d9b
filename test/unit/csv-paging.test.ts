import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decidePaging, MAX_GAP_PAGES, type PagingDecision } from '../../src/sync/sources/csv-paging.js';

// The paging rule over generated servers: a dataset of `total` rows served `served` rows per page (a cap
// when below `asked`), optionally with `Link rel=next`, with header-only pages slipped in between, and a
// /stats total that may be unknown. The reader loop below is csv-source.ts's, without the HTTP.

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

/**
 * Pages through `s` as the CSV source does, with `statsTotal` as /stats' total (default: the true total when
 * the server has /stats); throws when paging does not end soon after the last row.
 */
function read(
  s: Server,
  statsTotal = s.statsKnown ? s.total : undefined,
): { outcome: PagingDecision; rowsSoFar: number; requests: number } {
  const pages = pagesOf(s);
  let size = s.asked;
  let rowsSoFar = 0;
  let gap = 0;
  let linkSeen = false;
  for (let page = 1; ; page++) {
    const p = pages[page - 1] ?? { rows: 0, link: false };
    rowsSoFar += p.rows;
    const decision = decidePaging({
      page,
      rows: p.rows,
      asked: s.asked,
      size,
      linkNext: p.link,
      linkSeen,
      rowsSoFar,
      gap,
      statsTotal,
    });
    linkSeen ||= p.link;
    if (decision.action !== 'continue') return { outcome: decision, rowsSoFar, requests: page };
    size = decision.size;
    gap = decision.gap;
    if (page > pages.length + 2 * MAX_GAP_PAGES + 4) throw new Error(`no end after ${page} pages`);
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

describe('CSV paging decisions (csv-paging.ts)', () => {
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
