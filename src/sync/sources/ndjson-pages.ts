import { nextLink } from '../../upstream/link-header.js';
import type { OpenResponse } from '../../upstream/open-stream.js';
import type { ExportValidator } from '../export-source.js';
import type { DecodedBlock } from '../../normalize/reject.js';
import { compareValidators, describeValidator, pageValidator } from './export-validators.js';
import { MAX_EMPTY_LINKED_PAGES, repeatedPage } from './csv-paging.js';
import { RepeatedPageWatch } from './ndjson-repeat.js';
import type { NdjsonBlock } from '../../extract/block-packer.js';

/** How a repeated page ends the export: complete or not, and why (`repeatedPage` of csv-paging.ts). */
export interface RepeatedEnd {
  complete: boolean;
  reason: string;
}

/**
 * The pages of an NDJSON export that answers in pages linked by `Link: <…>; rel="next"` (RFC 8288). The
 * seed shows neither the NDJSON export's path nor whether it pages (docs/upstream-contract.md), so a body
 * that links on is one page of the export, never the whole of it: the next pages are read in turn, their
 * lines numbered on from the page before (one arrival order for "last seen wins"), their rejects located by
 * page and line.
 *
 * A page repeating the record ids of the page before ends the export by the CSV export's rule
 * (`repeatedPage` of csv-paging.ts): complete after page 2 (a server answering a page past its last with
 * its last page), incomplete when page 2 repeats page 1 (the server ignores the page its `Link` asks for).
 * The repeated page is never decoded ({@link RepeatedPageWatch}).
 *
 * Empty pages that still link on (a server linking on from every page) end the export after
 * {@link MAX_EMPTY_LINKED_PAGES} in a row: complete when the `/stats` total confirms every record was read, else
 * incomplete (ndjson-source.ts).
 *
 * Whether the pages are one version of the export: only when each carries the validator page 1 had (an
 * `ETag` or a strong `Last-Modified` naming the export). Otherwise the run completes with its tombstones
 * blocked and records no validator (a 304 to page 1 alone would say nothing of the pages after it).
 */
export class NdjsonPages {
  /** The page being read (1-based). */
  page = 1;
  /** Line number of the last line of the pages before this one: this page's lines are numbered on from it. */
  lineOffset = 0;
  readonly #first: ExportValidator;
  readonly #visited = new Set<string>();
  /** Lines of the page being read, counted as its body passes ({@link countLines}). */
  #lines = 0;
  #endsWithNewline = true;
  /** Why the pages cannot be proven one version, once known. */
  consistency: string | undefined;
  /** Records (non-blank lines) of every page read, and of the page being read. */
  recordsSoFar = 0;
  #pageRecords = 0;
  /** Empty pages in a row that still linked on (a server linking on past its last row). */
  #emptyRun = 0;
  readonly #repeats = new RepeatedPageWatch();

  /**
   * @param first the answer of page 1 (the export's URL, after redirects)
   * @param maxPages pages read at most (`REPORTS_CSV_MAX_PAGES`, the runaway paging guard)
   */
  constructor(
    first: OpenResponse,
    private readonly maxPages: number,
  ) {
    this.#first = pageValidator(first.headers);
    this.#visited.add(first.finalUrl.href);
  }

  /** True when `res` (page 1's answer) links on: the export is paged. */
  static isPaged(res: OpenResponse): boolean {
    return nextLink(res.headers.link, res.finalUrl) !== undefined;
  }

  /** The page's body with its lines counted as they pass (how far the next page's numbers start). */
  async *countLines(body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    this.#lines = 0;
    this.#endsWithNewline = true;
    for await (const chunk of body) {
      for (let at = chunk.indexOf(0x0a); at !== -1; at = chunk.indexOf(0x0a, at + 1)) this.#lines++;
      if (chunk.length > 0) this.#endsWithNewline = chunk[chunk.length - 1] === 0x0a;
      yield chunk;
    }
  }

  /** The page's raw blocks, a page repeating the one before held back ({@link RepeatedPageWatch}). */
  rawBlocks(blocks: AsyncIterable<NdjsonBlock>): AsyncIterable<NdjsonBlock> {
    return this.#repeats.filter(blocks);
  }

  /** Locates a decoded block's rejects by page and line within the page (pages after the first, or all once paged). */
  locate(block: DecodedBlock): DecodedBlock {
    this.recordsSoFar += block.read;
    this.#pageRecords += block.read;
    for (const r of block.rejects) r.location = { page: this.page, line: r.location.line - this.lineOffset };
    return block;
  }

  /**
   * Where the export goes on after the page `res` answered, now read to its end: the next page's URL, or
   * `{ end }` (the last page: no `rel="next"`), or `{ loop }` (a link back to a page already read, or past
   * `maxPages`: the export stops incomplete), or `{ repeated }` (the page repeated the one before: the end,
   * complete or not as `repeatedPage` says).
   */
  next(
    res: OpenResponse,
  ): { url: URL } | { end: true } | { loop: string } | { pastEnd: string } | { repeated: RepeatedEnd } {
    if (this.#repeats.repeated) {
      const { page } = this;
      const ignored = 'the page its `Link` asks for';
      return {
        repeated: repeatedPage({ page, repeated: page - 1, fullBefore: true, url: res.url, ignored }),
      };
    }
    const url = nextLink(res.headers.link, res.finalUrl);
    if (url === undefined) return { end: true };
    this.#emptyRun = this.#pageRecords === 0 ? this.#emptyRun + 1 : 0;
    this.#pageRecords = 0;
    if (this.#emptyRun > MAX_EMPTY_LINKED_PAGES) {
      return { pastEnd: `${this.#emptyRun} empty pages in a row of the NDJSON export still link on` };
    }
    if (this.#visited.has(url.href)) {
      return {
        loop: `page ${this.page} of the NDJSON export links back to a page already read (${url.href})`,
      };
    }
    if (this.page >= this.maxPages) {
      return { loop: `the NDJSON export still links on past REPORTS_CSV_MAX_PAGES=${this.maxPages} pages` };
    }
    this.#visited.add(url.href);
    this.lineOffset += this.#lines + (this.#endsWithNewline ? 0 : 1);
    this.page++;
    this.#repeats.startPage();
    return { url };
  }

  /** Notes the validator of a page after the first: a page without page 1's makes the pages unproven. */
  checkPage(res: OpenResponse): void {
    const seen = pageValidator(res.headers);
    if (this.consistency !== undefined || compareValidators(this.#first, seen) === 'same') return;
    this.consistency =
      `page ${this.page} of the paged NDJSON export has ${describeValidator(seen)} where page 1 had ` +
      `${describeValidator(this.#first)}: the pages cannot be proven to be of one version`;
  }
}
